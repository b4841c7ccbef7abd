;redcode-94
;name Two Ways
;author DEI project
;strategy A bomber that walks in both directions at once: one DAT goes forward through a
;strategy post-incremented pointer and one backward through a pre-decremented one, 1 cell
;strategy apart each, so it is a slow bidirectional core clear started from its own code.
fwd     dat     #0, #8
back    dat     #0, #-3
loop    mov.i   bomb, >fwd
        mov.i   bomb, <back
        jmp     loop
bomb    dat     #0, #0
        end     loop
