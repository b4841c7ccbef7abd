;redcode-94
;name Plain Sweep
;author DEI project
;strategy The simplest core clear: one process writes a DAT into every cell from just after
;strategy its code onward. With no SPL behind it, it is slow, and when the sweep wraps round
;strategy the core it wipes its own code and dies.
sweep   mov.i   bomb, >ptr
        jmp     sweep
ptr     dat     #0, #2
bomb    dat     #0, #0
        end     sweep
