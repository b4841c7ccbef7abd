;redcode-94
;name Drip
;author DEI project
;strategy One line that loops on itself and decrements a cell further back every cycle: a
;strategy slow decrement clear. It changes B-fields rather than killing, which breaks some
;strategy warriors (pointers, counters) and leaves others unharmed.
drip    djn.b   drip, <-10
        end     drip
