;redcode-94
;name Copycat
;author DEI project
;strategy A replicator that copies itself backwards: two pre-decremented pointers walk
;strategy down from the end of the body and its target 2411 cells on; when the count runs
;strategy out it starts a process in the copy, resets the pointers and copies again.
dist    equ     2411
len     equ     11
start   mov.ab  #len, src
        mov.ab  #len+dist, dst
        mov.ab  #len, cnt
copy    mov.i   <src, <dst
        djn.b   copy, cnt
        spl     @dst
        jmp     start
src     dat     #0, #0
dst     dat     #0, #0
cnt     dat     #0, #0
        dat     #0, #0
        end     start
