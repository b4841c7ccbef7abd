;redcode-94
;name Eight on a Ring
;author DEI project
;strategy An imp spiral: eight processes run one three-point imp ring (3 * 2667 = 8001).
;strategy Three SPL 1 make eight processes; each jumps through a post-incremented pointer
;strategy to its own entry of a jump table, so process k starts k ring steps along.
istep   equ     2667
start   spl     1
        spl     1
        spl     1
        jmp     >vec
vec     dat     #0, #1
        jmp     imp
        jmp     imp+1*istep
        jmp     imp+2*istep
        jmp     imp+3*istep
        jmp     imp+4*istep
        jmp     imp+5*istep
        jmp     imp+6*istep
        jmp     imp+7*istep
imp     mov.i   #0, istep
        end     start
