/* fuzz_fields.h — the properties of a named-field decoder's outcome, shared
 * by fuzz_fields.c and fuzz_avro.c: the fault is a kind; an accepted record's
 * label is a class (-1 when the spec reads none), every feature is finite,
 * and each categorical or hashed span holds 0s and at most one 1. */
#ifndef SC_FUZZ_FIELDS_H
#define SC_FUZZ_FIELDS_H

#include <math.h>

#include "fuzz_common.h"
#include "sc_decode.h"

/* Appends a field (mean 50, std 20, fill -1, 7 buckets) to fs; aborts when
 * it cannot be added. */
static inline void sc_fuzz_add_field(sc_fields_t *fs, const char *path, int column,
                                     sc_field_kind_t kind, sc_field_missing_t missing,
                                     int indicator, const char *const *vocab)
{
        sc_field_t f;
        char why[256];
        sc_field_defaults(&f);
        snprintf(f.path, sizeof(f.path), "%s", path);
        f.column = column;
        f.kind = kind;
        f.missing = missing;
        f.indicator = indicator;
        f.mean = 50;
        f.std = 20;
        f.fill = -1;
        f.buckets = 7;
        if (vocab) {
                f.vocab = sc_vocab_new();
                SC_FUZZ_ASSERT(f.vocab);
                for (; *vocab; vocab++)
                        SC_FUZZ_ASSERT(sc_vocab_add(f.vocab, *vocab, strlen(*vocab)) >= 0);
        }
        if (sc_fields_add(fs, &f, why, sizeof(why)) < 0) {
                fprintf(stderr, "fuzz: field %s: %s\n", path, why);
                abort();
        }
}

static inline void sc_fuzz_check_decoded(const sc_decode_spec_t *spec, sc_decode_fault_t f,
                                         const float *x, int32_t label)
{
        SC_FUZZ_ASSERT(f >= SC_DECODE_OK && f < SC_DECODE_FAULT__END);
        if (f != SC_DECODE_OK)
                return;
        if (spec->label_source == SC_DECODE_LABEL_NONE)
                SC_FUZZ_ASSERT(label == -1);
        else
                SC_FUZZ_ASSERT(label >= 0 && label < spec->n_classes);
        for (size_t i = 0; i < spec->numel; i++)
                SC_FUZZ_ASSERT(isfinite(x[i]));
        for (size_t i = 0; i < spec->fields->n; i++) {
                const sc_field_t *fd = &spec->fields->field[i];
                if (fd->kind != SC_FIELD_CATEGORICAL && fd->kind != SC_FIELD_HASHED)
                        continue;
                float sum = 0;
                for (size_t k = 0; k < fd->width; k++) {
                        float v = x[fd->offset + k];
                        SC_FUZZ_ASSERT(v == 0.0f || v == 1.0f);
                        sum += v;
                }
                SC_FUZZ_ASSERT(sum <= 1.0f);
        }
}

#endif
