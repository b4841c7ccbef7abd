;redcode-94
;name Triple Ring
;author DEI project
;strategy An imp ring: three imps 2667 cells apart (3 * 2667 = 8001, one more than
;strategy the core size) move forward together, each one writing the cell the next
;strategy will execute. The launcher orders the three processes so the ring closes.
step    equ     2667
start   mov.i   imp, imp+step
        mov.i   imp, imp+2*step
        spl     first
        spl     third
        jmp     imp+step
first   jmp     imp
third   jmp     imp+2*step
imp     mov.i   #0, step
        end     start
