;redcode-94
;name Hopper
;author DEI project
;strategy A mover: a single process copies its nine-line body 800 cells ahead and jumps into
;strategy the copy, over and over (the copy resets its own pointers first). It never attacks;
;strategy it only hopes that bombs land where it was, not where it is.
dist    equ     800
start   mov.a   #start-src, src
        mov.ab  #start-dst+dist, dst
        mov.ab  #9, cnt
copy    mov.i   }src, >dst
        djn.b   copy, cnt
        jmp     start+dist
src     dat     #0, #0
dst     dat     #0, #0
cnt     dat     #0, #0
        end     start
