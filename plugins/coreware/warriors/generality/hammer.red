;redcode-94
;name Hammer
;author DEI project
;strategy A stone with two bombs per loop and a spawner: SPL 0 feeds a loop that bombs two
;strategy cells 1002 apart (A- and B-field pointers of one cell) and moves both by 3340,
;strategy a multiple of 4 chosen so the bombs miss the code.
        spl     #0, 0
loop    mov.i   bomb, @ptr
        mov.i   bomb, *ptr
        add.f   inc, ptr
        jmp     loop
ptr     dat     #1006, #4
inc     dat     #3340, #3340
bomb    dat     #0, #0
        end     loop-1
