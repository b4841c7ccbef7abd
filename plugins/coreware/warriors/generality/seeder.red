;redcode-94
;name Seeder
;author DEI project
;strategy A bomber whose bombs are imps: every 6th cell gets a MOV 0, 1. An opponent's
;strategy process that runs into one becomes a harmless imp, and the opponent's own code is
;strategy overwritten by that imp as it passes; a slow, odd kind of attack.
step    equ     6
loop    mov.i   seed, @ptr
        sub.ab  #step, ptr
        jmp     loop
ptr     dat     #0, #-2
seed    mov.i   #0, 1
        end     loop
