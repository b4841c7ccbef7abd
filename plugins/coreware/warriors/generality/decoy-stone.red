;redcode-94
;name Smoke Screen
;author DEI project
;strategy A stone hidden behind decoys: eight non-empty DAT cells in front of the code make
;strategy scanners waste their attacks there. The stone itself bombs every 5th cell with a
;strategy DAT through a post-increment, which also leaves a trail of small changed cells.
step    equ     5
        dat     #1, #2
        dat     #3, #4
        dat     #5, #6
        dat     #7, #8
        dat     #9, #10
        dat     #11, #12
        dat     #13, #14
        dat     #15, #16
loop    mov.i   bomb, }ptr
        add.a   #step-1, ptr
        jmp     loop
ptr     dat     #step, #0
bomb    dat     #0, #0
        end     loop
