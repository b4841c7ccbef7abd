;redcode-94
;name Snare and Sweep
;author DEI project
;strategy Two phases. First a stun bomber lays SPL #0 every 12 cells for 780 bombs (a
;strategy process that runs into one keeps splitting uselessly); then it sweeps the core
;strategy forward with DAT bombs to kill the stunned processes, and parks when done.
step    equ     12
loop    add.ab  #step, ptr
        mov.i   snare, @ptr
        djn.b   loop, #780
sweep   mov.i   kill, >ptr
        djn.b   sweep, #6600
park    jmp     park
ptr     dat     #0, #0
snare   spl     #0, 0
kill    dat     #0, #0
        end     loop
