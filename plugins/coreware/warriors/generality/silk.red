;redcode-94
;name Thin Silk
;author DEI project
;strategy A silk-style paper: eight processes share one copy loop that moves the body with
;strategy post-incremented pointers to 3120 cells on, then split there. Because all processes
;strategy run the copy together it finishes in a few cycles and spreads very fast.
dist    equ     3120
start   spl     1
        spl     1
        spl     1
body    spl     @body, }dist
        mov.i   }body, >body
        mov.i   bomb, }-900
        jmp     body
bomb    dat     #0, #0
        end     start
