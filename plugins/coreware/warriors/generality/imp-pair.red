;redcode-94
;name Imp Pair
;author DEI project
;strategy Two processes run one imp: SPL 1 makes the second, and both execute the same
;strategy self-copying MOV in turn, so one stray bomb on the imp's trail kills only one of them.
;assert CORESIZE >= 2
start   spl     1
imp     mov.i   #0, 1
        end     start
