;redcode-94
;name Paper Kite
;author DEI project
;strategy A replicator with a tail: each copy first starts an imp, then copies its body 977
;strategy cells ahead with a post-increment loop and splits into the copy. The imps keep the
;strategy warrior alive (a likely tie) when a bomber catches every copy.
dist    equ     977
len     equ     9
start   spl     imp
        mov.ab  #0, src
        mov.ab  #dist, dst
copy    mov.i   }src, >dst
        jmn.a   copy, src
        spl     @dst
        jmp     start
src     dat     #0, #0
dst     dat     #0, #0
imp     mov.i   #0, 1
        end     start
