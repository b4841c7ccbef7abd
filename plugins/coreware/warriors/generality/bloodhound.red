;redcode-94
;name Bloodhound
;author DEI project
;strategy A scanning vampire: a B-field scan every 293 cells; where it finds code it writes
;strategy a JMP whose target is its own pit, a SPL 0 / JMP -1 pair that soaks up the captured
;strategy processes, which then do no harm and slow their own warrior down.
step    equ     293
scan    add.ab  #step, ptr
        jmz.b   scan, @ptr
        mov.ab  ptr, fang
        sub.b   pitd, fang
        mov.i   fang, @ptr
        jmp     scan
ptr     dat     #0, #0
fang    jmp     0, 0
pitd    dat     #0, #fang-pit
pit     spl     0, 0
        jmp     pit, 0
        end     scan
