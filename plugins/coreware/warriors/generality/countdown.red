;redcode-94
;name Countdown
;author DEI project
;strategy A bomber that retires into an imp: it drops 1000 DAT bombs 8 cells apart (a
;strategy counted DJN loop), then starts an imp behind itself that crawls on for the rest of
;strategy the battle, so it survives to a tie when the bombs missed.
step    equ     8
loop    add.ab  #step, ptr
        mov.i   bomb, @ptr
        djn.b   loop, #1000
        jmp     imp
ptr     dat     #0, #4
bomb    dat     #0, #0
imp     mov.i   #0, 1
        end     loop
