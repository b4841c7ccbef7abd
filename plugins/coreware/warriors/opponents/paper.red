;redcode-94
;name Scrap Paper
;author DEI developers
;strategy A replicator: copies its whole body 1873 cells ahead with a counted
;strategy loop, starts a process in the copy, and goes back to copying. Every copy
;strategy does the same, so the warrior spreads through the core in a chain and
;strategy bombing a few copies does not kill it.
dist    equ     1873
len     equ     10
start   mov.ab  #start-src, src
        mov.ab  #start-dst+dist, dst
        mov.ab  #len, cnt
copy    mov.i   >src, >dst
        djn.b   copy, cnt
        spl     start+dist
        jmp     start
src     dat     #0, #0
dst     dat     #0, #0
cnt     dat     #0, #0
        end     start
