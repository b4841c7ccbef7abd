;redcode-94
;name Drizzle
;author DEI project
;strategy A scanner that lays carpets: it scans with JMZ.F (both fields zero means empty) in
;strategy steps of 117, and on a find it drops six SPL #0 bombs in a row there, enough to stun
;strategy a small warrior, then scans on. It has no DAT phase, so it rarely kills.
step    equ     117
scan    add.ab  #step, ptr
        jmz.f   scan, @ptr
        mov.i   spl0, >ptr
        mov.i   spl0, >ptr
        mov.i   spl0, >ptr
        mov.i   spl0, >ptr
        mov.i   spl0, >ptr
        mov.i   spl0, >ptr
        jmp     scan
ptr     dat     #0, #step
spl0    spl     #0, 0
        end     scan
