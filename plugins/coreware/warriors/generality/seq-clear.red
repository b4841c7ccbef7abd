;redcode-94
;name Scan and Wipe
;author DEI project
;strategy A SEQ scanner that turns into a core clear: it scans two cells 4 apart, and the
;strategy first time they differ it stops scanning and clears the core forward from there
;strategy with SPL #0 then DAT, a two-pass clear that first stuns and then kills.
step    equ     196
scan    add.f   inc, look
look    seq.i   400, 404
        jmp     found
        jmp     scan
found   mov.ab  look, ptr
stun    mov.i   spl0, >ptr
        djn.b   stun, #400
        mov.ab  look, ptr
kill    mov.i   dat0, >ptr
        jmp     kill
inc     dat     #step, #step
ptr     dat     #0, #0
spl0    spl     #0, 0
dat0    dat     #0, #0
        end     scan
