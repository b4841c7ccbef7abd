;redcode-94
;name Quick Look
;author DEI project
;strategy A quick-scanner: before doing anything else it compares four pairs of far cells in
;strategy straight-line code (no loop), and bombs the first pair that differs with a SPL/DAT
;strategy pair; then, found or not, it falls through into a simple DAT bomber.
start   seq.i   start+1000, start+1500
        jmp     hit1
        seq.i   start+2500, start+3000
        jmp     hit2
        seq.i   start+4000, start+4500
        jmp     hit3
        seq.i   start+5500, start+6000
        jmp     hit4
        jmp     bomber
hit1    mov.ab  #start+1000-ptr, ptr
        jmp     attack
hit2    mov.ab  #start+2500-ptr, ptr
        jmp     attack
hit3    mov.ab  #start+4000-ptr, ptr
        jmp     attack
hit4    mov.ab  #start+5500-ptr, ptr
attack  mov.i   stun, >ptr
        mov.i   stun, >ptr
        mov.i   kill, >ptr
        mov.i   kill, >ptr
bomber  add.ab  #9, ptr
        mov.i   kill, @ptr
        jmp     bomber
ptr     dat     #0, #0
stun    spl     #0, 0
kill    dat     #0, #0
        end     start
