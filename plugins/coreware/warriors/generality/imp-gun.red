;redcode-94
;name Imp Gun
;author DEI project
;strategy A stream of imps: a counted loop starts 300 new processes at one imp, so a train
;strategy of imps follows each other through the core, then the launcher waits in a JMP 0.
;strategy Many processes make it slow to kill, and the imps rarely kill anything either.
gun     spl     imp
        djn.b   gun, #300
        jmp     0
imp     mov.i   #0, 1
        end     gun
