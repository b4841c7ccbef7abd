;redcode-94
;name Broom
;author DEI developers
;strategy A core clear: a SPL 0 keeps spawning processes that all run a two-line
;strategy loop wiping the core with DAT bombs, one cell further on every pass.
clear   spl     #0, 0
wipe    mov.i   bomb, >ptr
        djn.f   wipe, >ptr
ptr     dat     #0, #10
bomb    dat     #0, #0
        end     clear
