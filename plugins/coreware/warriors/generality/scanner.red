;redcode-94
;name Spyglass
;author DEI project
;strategy A scanner: looks at two cells 4 apart every loop, and when one of them
;strategy is not empty it bombs there with a SPL 0 (stunning the opponent into making
;strategy useless processes), then keeps scanning.
step    equ     14
gap     equ     7
scan    add.f   inc, look
look    sne.i   gap, 0
        jmp     scan
        mov.i   stun, @look
        mov.i   stun, *look
        jmp     scan
stun    spl     #0, 0
inc     dat     #step, #step
        end     scan
