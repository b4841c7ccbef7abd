/*
 * _cmars.c -- the MARS inner loop of dei_coreware: runs whole Core War rounds in C.
 *
 * Semantics follow pMARS 0.9.4 (ICWS'94 + EXT94 + P-space + read/write limits) exactly;
 * the code is our own. Python (dei_coreware.mars) precomputes the placements and the first
 * mover of every round, packs the load images and calls run_rounds(), which releases the GIL
 * for the whole batch so that independent batches can run in threads.
 *
 * Cell layout: 8 bytes, fields reduced to [0, coresize) so coresize is limited to 65535.
 * op = opcode * 8 + modifier (the numbering of dei_coreware.redcode), modes use the
 * redcode.MODES numbering: # $ * @ { < } >.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint16_t a, b;
    uint8_t op, am, bm;
    uint8_t mp; /* am * 8 + bm, kept with the modes so dispatch needs no arithmetic */
} cell_t;

enum { DAT, MOV, ADD, SUB, MUL, DIV, MOD, JMP, JMZ, JMN, DJN, SPL, SLT, CMP, SEQ, SNE, NOP,
       LDP, STP, NUM_OPCODES };
enum { mA, mB, mAB, mBA, mF, mX, mI };
enum { IMM, DIR, AIND, BIND, APRE, BPRE, APOST, BPOST };

#define OPM(o, m) (((o) << 3) + (m))

/* Non-zero when two cells differ in opcode, modifier or modes (mp follows the modes). */
static inline uint32_t kind_word(const cell_t *c) {
    uint32_t k;
    memcpy(&k, &c->op, sizeof k);
    return k;
}
#define SAME_KIND(x, y) (kind_word(core + (x)) != kind_word(core + (y)))

/* Output columns per (round, warrior), int64. */
enum { O_DEATH_CYCLE, O_ALIVE_CYCLES, O_SPAWNED, O_COVERAGE, O_EXECUTED, O_DEATH_LEFT,
       O_SURVIVED, O_NCOLS };
/* Output columns per round, int64. */
enum { R_CYCLES, R_SURVIVORS, R_NCOLS };

#define MAXW 64

typedef struct {
    /* settings */
    int coresize, nwar, processes, read_limit, write_limit, pspacesize;
    long long cycles;
    int observe;
    /* load images */
    const cell_t *code[MAXW];
    int len[MAXW], start[MAXW], psp[MAXW];
    /* round inputs */
    const int32_t *positions; /* rounds x nwar */
    const int32_t *starters;  /* rounds */
    int rounds;
    /* p-space (carried across the rounds of one batch, as pMARS does) */
    uint16_t *pspace;      /* npsp x pspacesize */
    uint16_t *last_result; /* nwar */
    /* outputs */
    int64_t *out_w;  /* rounds x nwar x O_NCOLS */
    double *out_share; /* rounds x nwar */
    int64_t *out_r;  /* rounds x R_NCOLS */
    /* work memory */
    cell_t *core;
    uint32_t *queue; /* nwar x qcap */
    uint32_t qmask;
    uint8_t *cover;  /* nwar x coresize, only when observing */
} sim_t;

typedef struct wq {
    struct wq *next;  /* next living warrior in move order */
    uint32_t *q;      /* ring buffer of qmask + 1 addresses */
    uint8_t *cov;     /* coverage map (coresize bytes) when observing */
    uint64_t head;    /* pops so far: also the warrior's executed-instruction count */
    uint64_t tail;
    int tasks;
    int index;        /* warrior number */
    int64_t spawned;  /* successful SPLs */
} wq_t;

#define ALWAYS_INLINE __attribute__((always_inline)) inline

/* pMARS's foldr()/foldw(): maps an address into the window [-limit/2, limit/2] around pc. */
static ALWAYS_INLINE int fold(int x, int pc, int cs, int limit) {
    int r = (x + cs - pc) % limit;
    if (r > limit / 2) r += cs - limit;
    r += pc;
    if (r >= cs) r -= cs;
    return r;
}

/*
 * One round. OBS and RW are compile-time constants in each instantiation so the hot loop has
 * no observation or read/write-limit branches when they are not needed.
 */
static ALWAYS_INLINE void sim_round(sim_t *s, int round, const int OBS, const int RW) {
    const int cs = s->coresize;
    const int cs1 = cs - 1;
    const int N = s->nwar;
    const int rl = s->read_limit, wl = s->write_limit;
    const int psz = s->pspacesize;
    const uint32_t qmask = s->qmask;
    cell_t *const core = s->core;
    wq_t wq[MAXW];
    int64_t death_cycle[MAXW], death_left[MAXW];
    int i;

    const int32_t *pos = s->positions + (size_t)round * N;

    /* Core cleared to DAT.F $0, $0; warriors copied in at their positions. */
    {
        cell_t init = {0, 0, OPM(DAT, mF), DIR, DIR, DIR * 8 + DIR};
        for (i = 0; i < cs; i++) core[i] = init;
    }
    if (OBS) memset(s->cover, 0, (size_t)N * cs);
    for (i = 0; i < N; i++) {
        memcpy(core + pos[i], s->code[i], sizeof(cell_t) * s->len[i]);
        wq[i].q = s->queue + (size_t)i * (qmask + 1);
        wq[i].cov = OBS ? s->cover + (size_t)i * cs : NULL;
        wq[i].head = 0;
        wq[i].tail = 1;
        wq[i].tasks = 1;
        wq[i].q[0] = (uint32_t)((pos[i] + s->start[i]) % cs);
        wq[i].next = &wq[(i + 1) % N];
        wq[i].index = i;
        wq[i].spawned = 0;
        death_cycle[i] = -1;
        death_left[i] = 0;
    }

    const long long cycles = s->cycles;
    long long cycle = (long long)N * cycles;
    /* pMARS's counter can go below zero when a warrior dies on the very last step with three
     * or more alive (it then plays on until one is left); stop such rounds after one more
     * full cycle budget instead of practically never. */
    const long long floor_cycle = -(long long)N * cycles;
    int left = N;
    long long last_t = 0;

    wq_t *w = &wq[s->starters[round]];
    uint32_t *q;
    int pc, addrA, addrB, raddrB, t, ptr;
    unsigned aa, ab, ba, bb;
    cell_t IR;

#define PUSH(v)                                   \
    do {                                          \
        int v_ = (v);                             \
        q[w->tail & qmask] = (uint32_t)v_;        \
        w->tail++;                                \
    } while (0)
#define FR(x) (RW ? fold((x), pc, cs, rl) : ((x) >= cs ? (x) - cs : (x)))
#define FW(x) (RW ? fold((x), pc, cs, wl) : ((x) >= cs ? (x) - cs : (x)))
#define WRAP(x) ((x) >= cs ? (x) - cs : (x))

    for (;;) {
        q = w->q;
        pc = (int)q[w->head & qmask];
        w->head++;
        /* memory_coverage: distinct addresses this warrior executed */
        if (OBS) w->cov[pc] = 1;
        IR = core[pc];

        /* Operands, evaluated in register as pMARS does. One 64-way switch on the mode pair
         * (each case specialised at compile time) costs one indirect branch instead of two.
         * A operand: addrA, aa (its A-field), ab (its B-field).
         * B operand: addrB (write address), raddrB (read address), ba, bb. An immediate B
         * operand reads the current core cell, not the register (the A operand may have
         * changed it). */
#define EVAL_A(M)                                                                      \
        do {                                                                           \
            if ((M) == IMM) {                                                          \
                addrA = pc; aa = IR.a; ab = IR.b;                                      \
            } else if ((M) == DIR) {                                                   \
                addrA = FR(pc + IR.a);                                                 \
                aa = core[addrA].a; ab = core[addrA].b;                                \
            } else if ((M) == AIND || (M) == BIND) {                                   \
                ptr = FR(pc + IR.a);                                                   \
                addrA = FR(ptr + ((M) == AIND ? core[ptr].a : core[ptr].b));           \
                aa = core[addrA].a; ab = core[addrA].b;                                \
            } else if ((M) == APRE || (M) == BPRE) {                                   \
                ptr = FW(pc + IR.a);                                                   \
                t = (M) == APRE ? core[ptr].a : core[ptr].b;                           \
                if (--t < 0) t = cs1;                                                  \
                if ((M) == APRE) core[ptr].a = (uint16_t)t; else core[ptr].b = (uint16_t)t; \
                addrA = FR(ptr + t);                                                   \
                aa = core[addrA].a; ab = core[addrA].b;                                \
            } else {                                                                   \
                ptr = FW(pc + IR.a);                                                   \
                t = (M) == APOST ? core[ptr].a : core[ptr].b;                          \
                addrA = FR(ptr + t);                                                   \
                aa = core[addrA].a; ab = core[addrA].b;                                \
                if (++t == cs) t = 0;                                                  \
                if ((M) == APOST) core[ptr].a = (uint16_t)t; else core[ptr].b = (uint16_t)t; \
            }                                                                          \
        } while (0)
#define B_TARGET(base, off)                                                            \
        do {                                                                           \
            if (RW) {                                                                  \
                addrB = fold((base) + (off), pc, cs, wl);                              \
                raddrB = fold((base) + (off), pc, cs, rl);                             \
            } else {                                                                   \
                addrB = raddrB = WRAP((base) + (off));                                 \
            }                                                                          \
        } while (0)
#define EVAL_B(M)                                                                      \
        do {                                                                           \
            if ((M) == IMM) {                                                          \
                addrB = raddrB = pc;                                                   \
                ba = core[pc].a; bb = core[pc].b;                                      \
            } else if ((M) == DIR) {                                                   \
                B_TARGET(pc, IR.b);                                                    \
                ba = core[raddrB].a; bb = core[raddrB].b;                              \
            } else if ((M) == AIND || (M) == BIND) {                                   \
                if (RW) {                                                              \
                    raddrB = fold(pc + IR.b, pc, cs, rl);                              \
                    addrB = fold(pc + IR.b, pc, cs, wl);                               \
                    t = (M) == AIND ? core[raddrB].a : core[raddrB].b;                 \
                    addrB = fold(addrB + t, pc, cs, wl);                               \
                    raddrB = fold(raddrB + t, pc, cs, rl);                             \
                } else {                                                               \
                    ptr = WRAP(pc + IR.b);                                             \
                    t = (M) == AIND ? core[ptr].a : core[ptr].b;                       \
                    addrB = raddrB = WRAP(ptr + t);                                    \
                }                                                                      \
                ba = core[raddrB].a; bb = core[raddrB].b;                              \
            } else if ((M) == APRE || (M) == BPRE) {                                   \
                ptr = FW(pc + IR.b);                                                   \
                t = (M) == APRE ? core[ptr].a : core[ptr].b;                           \
                if (--t < 0) t = cs1;                                                  \
                if ((M) == APRE) core[ptr].a = (uint16_t)t; else core[ptr].b = (uint16_t)t; \
                B_TARGET(ptr, t);                                                      \
                ba = core[raddrB].a; bb = core[raddrB].b;                              \
            } else {                                                                   \
                ptr = FW(pc + IR.b);                                                   \
                t = (M) == APOST ? core[ptr].a : core[ptr].b;                          \
                B_TARGET(ptr, t);                                                      \
                ba = core[raddrB].a; bb = core[raddrB].b;                              \
                if (++t == cs) t = 0;                                                  \
                if ((M) == APOST) core[ptr].a = (uint16_t)t; else core[ptr].b = (uint16_t)t; \
            }                                                                          \
        } while (0)
#define MODE_CASE(MA, MB) case (MA) * 8 + (MB): EVAL_A(MA); EVAL_B(MB); break;
#define MODE_ROW(MA) MODE_CASE(MA, 0) MODE_CASE(MA, 1) MODE_CASE(MA, 2) MODE_CASE(MA, 3) \
                     MODE_CASE(MA, 4) MODE_CASE(MA, 5) MODE_CASE(MA, 6) MODE_CASE(MA, 7)
        /* mp < 64 and op is a valid (opcode, modifier) pair: run_rounds() checks the load
         * images and execution only copies cells, so both switches need no range check. */
        switch (IR.mp) {
            MODE_ROW(0) MODE_ROW(1) MODE_ROW(2) MODE_ROW(3)
            MODE_ROW(4) MODE_ROW(5) MODE_ROW(6) MODE_ROW(7)
            default: __builtin_unreachable();
        }
#undef MODE_ROW
#undef MODE_CASE
#undef EVAL_A
#undef EVAL_B
#undef B_TARGET
        switch (IR.op) {
        case OPM(MOV, mA): core[addrB].a = (uint16_t)aa; break;
        case OPM(MOV, mB): core[addrB].b = (uint16_t)ab; break;
        case OPM(MOV, mAB): core[addrB].b = (uint16_t)aa; break;
        case OPM(MOV, mBA): core[addrB].a = (uint16_t)ab; break;
        case OPM(MOV, mF): core[addrB].a = (uint16_t)aa; core[addrB].b = (uint16_t)ab; break;
        case OPM(MOV, mX): core[addrB].b = (uint16_t)aa; core[addrB].a = (uint16_t)ab; break;
        case OPM(MOV, mI):
            /* opcode and modes come from the core as it is now, the fields from the register */
            core[addrB] = core[addrA];
            core[addrB].b = (uint16_t)ab;
            core[addrB].a = (uint16_t)aa;
            break;

#define ARITH(OPC, EXPR_A, EXPR_B)                                                     \
        case OPM(OPC, mA): { int x = ba, y = aa; core[addrB].a = (uint16_t)(EXPR_A); } break; \
        case OPM(OPC, mB): { int x = bb, y = ab; core[addrB].b = (uint16_t)(EXPR_B); } break; \
        case OPM(OPC, mAB): { int x = bb, y = aa; core[addrB].b = (uint16_t)(EXPR_B); } break; \
        case OPM(OPC, mBA): { int x = ba, y = ab; core[addrB].a = (uint16_t)(EXPR_A); } break; \
        case OPM(OPC, mF): case OPM(OPC, mI): {                                        \
            { int x = ba, y = aa; core[addrB].a = (uint16_t)(EXPR_A); }                \
            { int x = bb, y = ab; core[addrB].b = (uint16_t)(EXPR_B); } } break;       \
        case OPM(OPC, mX): {                                                           \
            { int x = bb, y = aa; core[addrB].b = (uint16_t)(EXPR_B); }                \
            { int x = ba, y = ab; core[addrB].a = (uint16_t)(EXPR_A); } } break;

        ARITH(ADD, (x + y >= cs ? x + y - cs : x + y), (x + y >= cs ? x + y - cs : x + y))
        ARITH(SUB, (x - y < 0 ? x - y + cs : x - y), (x - y < 0 ? x - y + cs : x - y))
        ARITH(MUL, ((uint32_t)x * (uint32_t)y % (uint32_t)cs),
              ((uint32_t)x * (uint32_t)y % (uint32_t)cs))
#undef ARITH

        /* DIV/MOD: a zero divisor kills the process, but the other half is still written. */
#define DIVMOD(OPC, OPER)                                                              \
        case OPM(OPC, mA): if (!aa) goto die; core[addrB].a = (uint16_t)(ba OPER aa); break; \
        case OPM(OPC, mB): if (!ab) goto die; core[addrB].b = (uint16_t)(bb OPER ab); break; \
        case OPM(OPC, mAB): if (!aa) goto die; core[addrB].b = (uint16_t)(bb OPER aa); break; \
        case OPM(OPC, mBA): if (!ab) goto die; core[addrB].a = (uint16_t)(ba OPER ab); break; \
        case OPM(OPC, mF): case OPM(OPC, mI):                                          \
            if (aa) core[addrB].a = (uint16_t)(ba OPER aa);                            \
            if (!ab) goto die;                                                         \
            core[addrB].b = (uint16_t)(bb OPER ab);                                    \
            if (!aa) goto die;                                                         \
            break;                                                                     \
        case OPM(OPC, mX):                                                             \
            if (ab) core[addrB].a = (uint16_t)(ba OPER ab);                            \
            if (!aa) goto die;                                                         \
            core[addrB].b = (uint16_t)(bb OPER aa);                                    \
            if (!ab) goto die;                                                         \
            break;

        DIVMOD(DIV, /)
        DIVMOD(MOD, %)
#undef DIVMOD

        case OPM(JMP, mA): case OPM(JMP, mB): case OPM(JMP, mAB): case OPM(JMP, mBA):
        case OPM(JMP, mF): case OPM(JMP, mX): case OPM(JMP, mI):
            PUSH(addrA);
            goto nopush;

        case OPM(JMZ, mA): case OPM(JMZ, mBA):
            if (ba) break;
            PUSH(addrA);
            goto nopush;
        case OPM(JMZ, mB): case OPM(JMZ, mAB):
            if (bb) break;
            PUSH(addrA);
            goto nopush;
        case OPM(JMZ, mF): case OPM(JMZ, mX): case OPM(JMZ, mI):
            if (ba || bb) break;
            PUSH(addrA);
            goto nopush;

        case OPM(JMN, mA): case OPM(JMN, mBA):
            if (!ba) break;
            PUSH(addrA);
            goto nopush;
        case OPM(JMN, mB): case OPM(JMN, mAB):
            if (!bb) break;
            PUSH(addrA);
            goto nopush;
        case OPM(JMN, mF): case OPM(JMN, mX): case OPM(JMN, mI):
            if (!ba && !bb) break;
            PUSH(addrA);
            goto nopush;

        /* DJN decrements the core cell but tests the register copy. */
        case OPM(DJN, mA): case OPM(DJN, mBA):
            t = core[addrB].a; core[addrB].a = (uint16_t)(t ? t - 1 : cs1);
            if (ba == 1) break;
            PUSH(addrA);
            goto nopush;
        case OPM(DJN, mB): case OPM(DJN, mAB):
            t = core[addrB].b; core[addrB].b = (uint16_t)(t ? t - 1 : cs1);
            if (bb == 1) break;
            PUSH(addrA);
            goto nopush;
        case OPM(DJN, mF): case OPM(DJN, mX): case OPM(DJN, mI):
            t = core[addrB].b; core[addrB].b = (uint16_t)(t ? t - 1 : cs1);
            t = core[addrB].a; core[addrB].a = (uint16_t)(t ? t - 1 : cs1);
            if (ba == 1 && bb == 1) break;
            PUSH(addrA);
            goto nopush;

        case OPM(SPL, mA): case OPM(SPL, mB): case OPM(SPL, mAB): case OPM(SPL, mBA):
        case OPM(SPL, mF): case OPM(SPL, mX): case OPM(SPL, mI):
            t = pc + 1;
            if (t == cs) t = 0;
            PUSH(t);
            if (w->tasks >= s->processes) goto nopush;
            w->tasks++;
            w->spawned++;
            PUSH(addrA);
            goto nopush;

        /* CMP is SEQ. Skips push pc + 2. */
        case OPM(CMP, mA): case OPM(SEQ, mA):
            if (ba != aa) break;
            goto skip;
        case OPM(CMP, mB): case OPM(SEQ, mB):
            if (bb != ab) break;
            goto skip;
        case OPM(CMP, mAB): case OPM(SEQ, mAB):
            if (bb != aa) break;
            goto skip;
        case OPM(CMP, mBA): case OPM(SEQ, mBA):
            if (ba != ab) break;
            goto skip;
        case OPM(CMP, mF): case OPM(SEQ, mF):
            if (ba != aa || bb != ab) break;
            goto skip;
        case OPM(CMP, mX): case OPM(SEQ, mX):
            if (bb != aa || ba != ab) break;
            goto skip;
        case OPM(CMP, mI): case OPM(SEQ, mI):
            if (SAME_KIND(raddrB, addrA) || ba != aa || bb != ab)
                break;
            goto skip;

        case OPM(SNE, mA):
            if (ba != aa) goto skip;
            break;
        case OPM(SNE, mB):
            if (bb != ab) goto skip;
            break;
        case OPM(SNE, mAB):
            if (bb != aa) goto skip;
            break;
        case OPM(SNE, mBA):
            if (ba != ab) goto skip;
            break;
        case OPM(SNE, mF):
            if (ba != aa || bb != ab) goto skip;
            break;
        case OPM(SNE, mX):
            if (bb != aa || ba != ab) goto skip;
            break;
        case OPM(SNE, mI):
            if (SAME_KIND(raddrB, addrA) || ba != aa || bb != ab)
                goto skip;
            break;

        case OPM(SLT, mA):
            if (ba <= aa) break;
            goto skip;
        case OPM(SLT, mB):
            if (bb <= ab) break;
            goto skip;
        case OPM(SLT, mAB):
            if (bb <= aa) break;
            goto skip;
        case OPM(SLT, mBA):
            if (ba <= ab) break;
            goto skip;
        case OPM(SLT, mF): case OPM(SLT, mI):
            if (ba <= aa || bb <= ab) break;
            goto skip;
        case OPM(SLT, mX):
            if (bb <= aa || ba <= ab) break;
            goto skip;

        case OPM(NOP, mA): case OPM(NOP, mB): case OPM(NOP, mAB): case OPM(NOP, mBA):
        case OPM(NOP, mF): case OPM(NOP, mX): case OPM(NOP, mI):
            break;

        /* P-space: location 0 is the warrior's own previous-round result. */
#define PS_GET(idx) ((idx) % psz ? s->pspace[(size_t)s->psp[w->index] * psz + (idx) % psz] \
                                 : s->last_result[w->index])
#define PS_SET(idx, v) do { if ((idx) % psz) \
        s->pspace[(size_t)s->psp[w->index] * psz + (idx) % psz] = (uint16_t)(v); \
        else s->last_result[w->index] = (uint16_t)(v); } while (0)
        case OPM(LDP, mA): core[addrB].a = PS_GET(aa); break;
        case OPM(LDP, mB): case OPM(LDP, mF): case OPM(LDP, mX): case OPM(LDP, mI):
            core[addrB].b = PS_GET(ab); break;
        case OPM(LDP, mAB): core[addrB].b = PS_GET(aa); break;
        case OPM(LDP, mBA): core[addrB].a = PS_GET(ab); break;
        case OPM(STP, mA): PS_SET(ba, aa); break;
        case OPM(STP, mB): case OPM(STP, mF): case OPM(STP, mX): case OPM(STP, mI):
            PS_SET(bb, ab); break;
        case OPM(STP, mAB): PS_SET(bb, aa); break;
        case OPM(STP, mBA): PS_SET(ba, ab); break;
#undef PS_GET
#undef PS_SET

        case OPM(DAT, mA): case OPM(DAT, mB): case OPM(DAT, mAB): case OPM(DAT, mBA):
        case OPM(DAT, mF): case OPM(DAT, mX): case OPM(DAT, mI):
            goto die;
        default:
            __builtin_unreachable();
        }
        /* next instruction */
        t = pc + 1;
        if (t == cs) t = 0;
        PUSH(t);
        goto nopush;
    skip:
        t = pc + 2;
        if (t >= cs) t -= cs;
        PUSH(t);
    nopush:
        w = w->next;
        if (__builtin_expect(--cycle <= 0, 0)) {
            if (cycle == 0 || cycle < floor_cycle) break;
        }
        continue;
    die:
        if (--w->tasks) goto nopush;
        {
            /* Round clock: cycle index = cycles - ceil(remaining steps / living warriors). */
            long long c = cycle > 0 ? cycle : 1;
            long long tc = cycles - (c + left - 1) / left;
            if (tc < 0) tc = 0;
            if (tc > cycles - 1) tc = cycles - 1;
            death_cycle[w->index] = tc;
            death_left[w->index] = left;
            last_t = tc;
        }
        cycle = cycle - 1 - (cycle - 1) / left;
        left--;
        if (left < 2) break;
        {
            /* unlink W from the ring of living warriors (found by walking it: deaths are
             * rare, so the hot loop does not track the previous warrior) */
            wq_t *prev = w;
            while (prev->next != w) prev = prev->next;
            prev->next = w->next;
        }
        w = w->next;
        if (--cycle == 0 || cycle < floor_cycle) break;
    }
#undef PUSH
#undef FR
#undef FW
#undef WRAP

    /* Round end: survivors, p-space result, observables. */
    int64_t *ow = s->out_w + (size_t)round * N * O_NCOLS;
    int64_t *orr = s->out_r + (size_t)round * R_NCOLS;
    double *osh = s->out_share + (size_t)round * N;
    int survivors = 0;
    for (i = 0; i < N; i++) {
        if (wq[i].tasks) {
            survivors++;
            s->last_result[i] = (uint16_t)left;
        } else {
            s->last_result[i] = 0;
        }
    }
    int ended_early = N >= 2 ? left < 2 : left == 0;
    long long round_cycles = ended_early ? last_t + 1 : cycles;
    orr[R_CYCLES] = round_cycles;
    orr[R_SURVIVORS] = survivors;
    for (i = 0; i < N; i++) {
        int64_t *o = ow + (size_t)i * O_NCOLS;
        o[O_DEATH_CYCLE] = wq[i].tasks ? -1 : death_cycle[i];
        o[O_ALIVE_CYCLES] = wq[i].tasks ? cycles : death_cycle[i];
        o[O_SPAWNED] = wq[i].spawned;
        o[O_EXECUTED] = (int64_t)wq[i].head;
        o[O_DEATH_LEFT] = wq[i].tasks ? 0 : death_left[i];
        o[O_SURVIVED] = wq[i].tasks ? 1 : 0;
        if (OBS) {
            const uint8_t *cv = s->cover + (size_t)i * cs;
            int64_t n = 0;
            for (int k = 0; k < cs; k++) n += cv[k];
            o[O_COVERAGE] = n;
        } else {
            o[O_COVERAGE] = 0;
        }
    }
    /* share_sum: sum over cycles t < limit of alive_i(t) / number alive(t), where warrior i
     * is alive at t when it has not died at or before t. The alive set only changes at death
     * cycles, so integrate piecewise over the sorted death cycles. */
    {
        long long ends[MAXW + 1];
        int ne = 0;
        for (i = 0; i < N; i++) {
            long long e = ow[(size_t)i * O_NCOLS + O_ALIVE_CYCLES];
            ends[ne++] = e;
            osh[i] = 0.0;
        }
        /* insertion sort, N is small */
        for (int a = 1; a < ne; a++) {
            long long v = ends[a];
            int b = a - 1;
            while (b >= 0 && ends[b] > v) { ends[b + 1] = ends[b]; b--; }
            ends[b + 1] = v;
        }
        long long from = 0;
        for (int k = 0; k < ne; k++) {
            long long to = ends[k];
            if (to <= from) continue;
            int alive = 0;
            for (i = 0; i < N; i++)
                if (ow[(size_t)i * O_NCOLS + O_ALIVE_CYCLES] >= to) alive++;
            if (alive) {
                double share = (double)(to - from) / alive;
                for (i = 0; i < N; i++)
                    if (ow[(size_t)i * O_NCOLS + O_ALIVE_CYCLES] >= to) osh[i] += share;
            }
            from = to;
        }
    }
}

static __attribute__((noinline)) void run_plain(sim_t *s, int r) { sim_round(s, r, 0, 0); }
static __attribute__((noinline)) void run_obs(sim_t *s, int r) { sim_round(s, r, 1, 0); }
static __attribute__((noinline)) void run_plain_rw(sim_t *s, int r) { sim_round(s, r, 0, 1); }
static __attribute__((noinline)) void run_obs_rw(sim_t *s, int r) { sim_round(s, r, 1, 1); }

static int get_buffer(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t min_bytes,
                      const char *what) {
    if (PyObject_GetBuffer(obj, view, writable ? PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS
                                               : PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->len < min_bytes) {
        PyErr_Format(PyExc_ValueError, "%s buffer too small (%zd < %zd bytes)", what,
                     view->len, min_bytes);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(run_rounds_doc,
"run_rounds(coresize, cycles, processes, read_limit, write_limit, pspacesize,\n"
"           code, lengths, starts, psp_index, positions, starters, observe,\n"
"           pspace, last_result, out_w, out_share, out_r)\n\n"
"Runs len(starters) rounds in order with the GIL released. code: packed 8-byte cells of\n"
"all warriors back to back; positions: int32 rounds x N; starters: int32 per round;\n"
"pspace (uint16 npsp x pspacesize) and last_result (uint16 N) are updated in place;\n"
"out_w: int64 rounds x N x 7, out_share: float64 rounds x N, out_r: int64 rounds x 2.");

static PyObject *run_rounds(PyObject *self, PyObject *args) {
    int coresize, processes, read_limit, write_limit, pspacesize, observe;
    long long cycles;
    PyObject *code_o, *lengths_o, *starts_o, *psp_o, *pos_o, *start_o, *pspace_o, *lr_o,
        *ow_o, *osh_o, *or_o;
    if (!PyArg_ParseTuple(args, "iLiiiiOOOOOOpOOOOO", &coresize, &cycles, &processes,
                          &read_limit, &write_limit, &pspacesize, &code_o, &lengths_o,
                          &starts_o, &psp_o, &pos_o, &start_o, &observe, &pspace_o, &lr_o,
                          &ow_o, &osh_o, &or_o))
        return NULL;
    if (coresize < 1 || coresize > 65535 || cycles < 1 || processes < 1 || read_limit < 1 ||
        write_limit < 1 || pspacesize < 1) {
        PyErr_SetString(PyExc_ValueError, "invalid MARS settings");
        return NULL;
    }
    sim_t s;
    memset(&s, 0, sizeof s);
    s.coresize = coresize;
    s.cycles = cycles;
    s.processes = processes;
    s.read_limit = read_limit;
    s.write_limit = write_limit;
    s.pspacesize = pspacesize;
    s.observe = observe;

    PyObject *lengths = PySequence_Fast(lengths_o, "lengths must be a sequence");
    PyObject *starts = PySequence_Fast(starts_o, "starts must be a sequence");
    PyObject *psps = PySequence_Fast(psp_o, "psp_index must be a sequence");
    if (!lengths || !starts || !psps) {
        Py_XDECREF(lengths); Py_XDECREF(starts); Py_XDECREF(psps);
        return NULL;
    }
    int N = (int)PySequence_Fast_GET_SIZE(lengths);
    PyObject *result = NULL;
    Py_buffer code = {0}, pos = {0}, st = {0}, psp = {0}, lr = {0}, ow = {0}, osh = {0}, orr = {0};
    int have = 0;
    cell_t *codecopy = NULL;
    if (N < 1 || N > MAXW || PySequence_Fast_GET_SIZE(starts) != N ||
        PySequence_Fast_GET_SIZE(psps) != N) {
        PyErr_SetString(PyExc_ValueError, "bad number of warriors");
        goto done;
    }
    s.nwar = N;
    long total = 0;
    int npsp = 0;
    for (int i = 0; i < N; i++) {
        s.len[i] = (int)PyLong_AsLong(PySequence_Fast_GET_ITEM(lengths, i));
        s.start[i] = (int)PyLong_AsLong(PySequence_Fast_GET_ITEM(starts, i));
        s.psp[i] = (int)PyLong_AsLong(PySequence_Fast_GET_ITEM(psps, i));
        if (PyErr_Occurred()) goto done;
        if (s.len[i] < 1 || s.len[i] > coresize || s.start[i] < 0 || s.psp[i] < 0 ||
            s.psp[i] >= N) {
            PyErr_SetString(PyExc_ValueError, "bad warrior length, start or p-space index");
            goto done;
        }
        if (s.psp[i] + 1 > npsp) npsp = s.psp[i] + 1;
        total += s.len[i];
    }
    if (get_buffer(code_o, &code, 0, total * (Py_ssize_t)sizeof(cell_t), "code") < 0) goto done;
    have |= 1;
    if (get_buffer(start_o, &st, 0, 0, "starters") < 0) goto done;
    have |= 2;
    int rounds = (int)(st.len / 4);
    s.rounds = rounds;
    if (get_buffer(pos_o, &pos, 0, (Py_ssize_t)rounds * N * 4, "positions") < 0) goto done;
    have |= 4;
    if (get_buffer(pspace_o, &psp, 1, (Py_ssize_t)npsp * pspacesize * 2, "pspace") < 0) goto done;
    have |= 8;
    if (get_buffer(lr_o, &lr, 1, (Py_ssize_t)N * 2, "last_result") < 0) goto done;
    have |= 16;
    if (get_buffer(ow_o, &ow, 1, (Py_ssize_t)rounds * N * O_NCOLS * 8, "out_w") < 0) goto done;
    have |= 32;
    if (get_buffer(osh_o, &osh, 1, (Py_ssize_t)rounds * N * 8, "out_share") < 0) goto done;
    have |= 64;
    if (get_buffer(or_o, &orr, 1, (Py_ssize_t)rounds * R_NCOLS * 8, "out_r") < 0) goto done;
    have |= 128;

    /* Private copy of the load images with the mode-pair byte filled in. */
    codecopy = (cell_t *)malloc(sizeof(cell_t) * (size_t)total);
    if (!codecopy) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(codecopy, code.buf, sizeof(cell_t) * (size_t)total);
    for (long k = 0; k < total; k++) {
        if (codecopy[k].am > 7 || codecopy[k].bm > 7 || codecopy[k].op >= NUM_OPCODES * 8 ||
            (codecopy[k].op & 7) > mI || codecopy[k].a >= coresize || codecopy[k].b >= coresize) {
            PyErr_SetString(PyExc_ValueError, "bad opcode, mode or field in code");
            goto done;
        }
        codecopy[k].mp = (uint8_t)(codecopy[k].am * 8 + codecopy[k].bm);
    }
    const cell_t *cp = codecopy;
    for (int i = 0; i < N; i++) {
        s.code[i] = cp;
        cp += s.len[i];
    }
    s.positions = (const int32_t *)pos.buf;
    s.starters = (const int32_t *)st.buf;
    for (int r = 0; r < rounds; r++) {
        if (s.starters[r] < 0 || s.starters[r] >= N) {
            PyErr_SetString(PyExc_ValueError, "bad starter");
            goto done;
        }
        for (int i = 0; i < N; i++) {
            int p = s.positions[(size_t)r * N + i];
            if (p < 0 || p + s.len[i] > coresize) {
                PyErr_SetString(PyExc_ValueError, "bad position");
                goto done;
            }
        }
    }
    s.pspace = (uint16_t *)psp.buf;
    s.last_result = (uint16_t *)lr.buf;
    s.out_w = (int64_t *)ow.buf;
    s.out_share = (double *)osh.buf;
    s.out_r = (int64_t *)orr.buf;

    uint32_t cap = 1;
    while (cap < (uint32_t)processes + 1) cap <<= 1;
    s.qmask = cap - 1;
    s.core = (cell_t *)malloc(sizeof(cell_t) * (size_t)coresize);
    s.queue = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)cap * N);
    s.cover = observe ? (uint8_t *)malloc((size_t)coresize * N) : NULL;
    if (!s.core || !s.queue || (observe && !s.cover)) {
        free(s.core); free(s.queue); free(s.cover);
        PyErr_NoMemory();
        goto done;
    }
    int rw = read_limit != coresize || write_limit != coresize;
    Py_BEGIN_ALLOW_THREADS
    for (int r = 0; r < rounds; r++) {
        if (rw) {
            if (observe) run_obs_rw(&s, r); else run_plain_rw(&s, r);
        } else {
            if (observe) run_obs(&s, r); else run_plain(&s, r);
        }
    }
    Py_END_ALLOW_THREADS
    free(s.core);
    free(s.queue);
    free(s.cover);
    result = Py_None;
    Py_INCREF(result);
done:
    free(codecopy);
    if (have & 1) PyBuffer_Release(&code);
    if (have & 2) PyBuffer_Release(&st);
    if (have & 4) PyBuffer_Release(&pos);
    if (have & 8) PyBuffer_Release(&psp);
    if (have & 16) PyBuffer_Release(&lr);
    if (have & 32) PyBuffer_Release(&ow);
    if (have & 64) PyBuffer_Release(&osh);
    if (have & 128) PyBuffer_Release(&orr);
    Py_DECREF(lengths);
    Py_DECREF(starts);
    Py_DECREF(psps);
    return result;
}

static PyMethodDef methods[] = {
    {"run_rounds", run_rounds, METH_VARARGS, run_rounds_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef mod = {
    PyModuleDef_HEAD_INIT, "_cmars",
    "MARS inner loop (pMARS 0.9.4 semantics) for dei_coreware.mars.", -1, methods,
};

PyMODINIT_FUNC PyInit__cmars(void) {
    PyObject *m = PyModule_Create(&mod);
    if (!m) return NULL;
    PyModule_AddIntConstant(m, "CELL_SIZE", (long)sizeof(cell_t));
    PyModule_AddIntConstant(m, "OUT_COLUMNS", O_NCOLS);
    PyModule_AddIntConstant(m, "ROUND_COLUMNS", R_NCOLS);
    PyModule_AddIntConstant(m, "MAX_WARRIORS", MAXW);
    return m;
}
