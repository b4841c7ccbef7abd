;redcode-94
;name Night Visitor
;author DEI project
;strategy A vampire: scatters JMP "fangs" through the core; a process that runs
;strategy into one is sent to the pit, where it splits forever without doing harm
;strategy and steals cycles from its own warrior.
step    equ     2365
loop    add.f   hop, fang
        mov.i   fang, @fang
        jmp     loop
fang    jmp     pit-step, step
hop     dat     #-step, #step
pit     spl     0, 0
        jmp     -1, 0
        end     loop
