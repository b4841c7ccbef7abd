;redcode-94
;name Pebble
;author DEI developers
;strategy A stone with a spawner: SPL 0 keeps adding processes that all run a
;strategy three-line bombing loop. The step 3045 is a multiple of 5, and the first
;strategy target is chosen so the only own cell the bombs can land on is the bomb.
step    equ     3045
        spl     0, 0
loop    mov.i   bomb, @ptr
ptr     add.ab  #step, #step+2
        jmp     loop
bomb    dat     #0, #0
        end     loop-1
