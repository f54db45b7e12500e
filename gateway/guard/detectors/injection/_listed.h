/* Which of a vocabulary's listed words the text of its last scan holds, as
 * bits: what `_wordset.Vocabulary` hands `_ways.WayTable` (through a capsule)
 * so that a way's needs are looked up in a few cache lines written by the
 * scan itself, rather than each in the text's word set through its str.
 *
 * The bits stand for one set only: `words`, the set the last scan returned,
 * which the vocabulary holds (so no other object can take its address) until
 * the next scan replaces it. A reader that is handed any other set reads
 * that set instead.
 */
#ifndef REEFGATE_LISTED_H
#define REEFGATE_LISTED_H

#include <stdint.h>

#define LISTED_CAPSULE "gateway.guard.detectors.injection._wordset.Listed"

typedef struct {
    PyObject *words;  /* the set the last scan returned, or NULL */
    uint64_t *bits;   /* bit n: the listed word numbered n occurs in its text */
    uint32_t count;   /* listed words: they are numbered 0 .. count - 1 */
} Listed;

static inline int
listed_holds(const Listed *listed, int32_t number)
{
    return number >= 0 && (listed->bits[number >> 6] >> (number & 63)) & 1;
}

#endif
