;redcode-94
;name Stunner
;author DEI developers
;strategy A stun bomber: drops a SPL #0 every 5 cells. A process that runs into one keeps
;strategy splitting into more processes that do nothing, slowing its warrior to a crawl. The
;strategy step is the code's length, so the only own cell a bomb can reach is the pointer.
;assert CORESIZE % 5 == 0
step    equ     5
loop    add.ab  #step, ptr
        mov.i   bomb, @ptr
        jmp     loop
ptr     dat     #0, #0
bomb    spl     #0, 0
        end     loop
