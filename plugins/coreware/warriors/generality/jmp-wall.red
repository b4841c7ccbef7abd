;redcode-94
;name Spin Wall
;author DEI project
;strategy A defensive core clear: SPL 0 fills the queue, and every process decrements the
;strategy cell ahead of a moving pointer and writes a JMP -1 there, building a wall of
;strategy two-cell loops that traps whatever runs into it.
        spl     #0, 0
wall    mov.i   trap, >ptr
        add.ab  #3, ptr
        jmp     wall, <ptr
ptr     dat     #0, #5
trap    jmp     -1, 0
        end     wall-1
