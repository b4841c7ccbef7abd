;redcode-94
;name Back Carpet
;author DEI project
;strategy A backward core clear: a SPL 0 spawner feeds processes into a loop that lays
;strategy SPL #0 bombs behind the code through a pre-decremented pointer, then a second
;strategy loop follows with DATs, so what the first pass stuns the second pass kills.
        spl     #0, 0
stun    mov.i   spl0, <ptr
        djn.b   stun, #1500
kill    mov.i   dat0, <ptr2
        jmp     kill
ptr     dat     #0, #-5
ptr2    dat     #0, #-6
spl0    spl     #0, 0
dat0    dat     #0, #0
        end     stun-1
