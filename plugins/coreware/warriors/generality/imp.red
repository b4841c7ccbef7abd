;redcode-94
;name Lone Imp
;author DEI project
;strategy The smallest survivor: one instruction that copies itself one cell ahead,
;strategy then executes the copy. It rarely wins but is very hard to kill outright.
;assert CORESIZE >= 2
imp     mov.i   #0, 1
        end     imp
