;redcode-94
;name Sitting Duck
;author DEI project
;strategy The weakest survivor: one process loops on two cells and does nothing else.
;strategy It ties against anything that cannot find it and loses to everything that can.
loop    nop     0, 0
        jmp     loop
        end     loop
