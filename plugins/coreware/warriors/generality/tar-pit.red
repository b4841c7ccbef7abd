;redcode-94
;name Tar Pit
;author DEI project
;strategy A bomber that does not kill: every 7th cell gets a JMP 0, a one-cell loop. A
;strategy process that steps into one runs in place forever, so the opponent stalls and the
;strategy battle most often ends in a tie, unless the opponent has processes elsewhere.
step    equ     7
loop    mov.i   tar, @ptr
        add.ab  #step, ptr
        jmp     loop
tar     jmp     0
ptr     dat     #0, #step+3
        end     loop
