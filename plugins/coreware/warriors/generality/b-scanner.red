;redcode-94
;name Seeker
;author DEI project
;strategy A B-field scanner: steps a pointer back by 3039 and looks only at the B-field
;strategy there (JMZ); a non-zero B-field means code, which it bombs with two DATs in a row
;strategy (post-incremented pointer) before scanning on.
step    equ     3039
scan    sub.ab  #step, ptr
        jmz.b   scan, @ptr
        mov.i   bomb, >ptr
        mov.i   bomb, >ptr
        jmp     scan
ptr     dat     #0, #step
bomb    dat     #0, #0
        end     scan
