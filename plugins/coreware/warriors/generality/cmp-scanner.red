;redcode-94
;name Twin Lens
;author DEI project
;strategy A CMP scanner: compares two cells 50 apart, moving both by 108 every loop. Equal
;strategy cells are (usually) empty core; when they differ it bombs both with DATs and
;strategy also drops a DAT between them, then resumes the scan.
step    equ     108
gap     equ     50
scan    add.f   inc, ptr
ptr     cmp.i   200, 200+gap
        jmp     hit
        jmp     scan
hit     mov.i   bomb, @ptr
        mov.i   bomb, *ptr
        jmp     scan
inc     dat     #step, #step
bomb    dat     #0, #0
        end     scan
