;redcode-94
;name Gatekeeper
;author DEI project
;strategy A pure defence: a SPL/JMP pair keeps decrementing the cell just before the code
;strategy (the gate), so an imp crawling in is changed into something that no longer copies
;strategy itself. It never attacks: at best it ties.
gate    dat     #0, #0
start   spl     #0, <gate
        jmp     start, <gate
        end     start
