;redcode-94
;name Process Flood
;author DEI project
;strategy A single SPL 0: fills its process queue with copies of itself. Harmless, but one
;strategy hit on that one cell leaves many processes to kill, which slows a DAT bomber down.
flood   spl     #0, #0
        end     flood
