;redcode-94
;name Little Dwarf
;author DEI developers
;strategy A bomber: drops a DAT every 4 cells, walking through the whole core.
;strategy The step divides the core size, so it never bombs its own code.
step    equ     4
loop    add.ab  #step, bomb
        mov.i   bomb, @bomb
        jmp     loop
bomb    dat     #0, #0
        end     loop
