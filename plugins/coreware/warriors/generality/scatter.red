;redcode-94
;name Scatter
;author DEI project
;strategy A pseudo-random bomber: a linear congruential step (multiply by 21, add 17) moves
;strategy the bomb pointer, so its DATs land all over the core in no regular pattern. It
;strategy does not avoid its own code, which makes it weak over a long battle.
loop    mul.a   #21, ptr
        add.a   #17, ptr
        mov.i   bomb, *ptr
        jmp     loop
ptr     dat     #33, #0
bomb    dat     #0, #0
        end     loop
