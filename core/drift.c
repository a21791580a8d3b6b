/* drift.c — Page-Hinkley detector of a rise of a stream's mean (sc_drift.h). */
#include "sc_drift.h"

#include <math.h>

void sc_drift_spec_defaults(sc_drift_spec_t *s)
{
        s->delta = SC_DRIFT_DEF_DELTA;
        s->threshold = SC_DRIFT_DEF_THRESHOLD;
        s->min_samples = SC_DRIFT_DEF_MIN_SAMPLES;
        s->alpha = SC_DRIFT_DEF_ALPHA;
}

void sc_drift_init(sc_drift_t *d, const sc_drift_spec_t *spec)
{
        if (spec)
                d->spec = *spec;
        else
                sc_drift_spec_defaults(&d->spec);
        if (!(d->spec.alpha > 0.0 && d->spec.alpha <= 1.0))
                d->spec.alpha = 1.0;
        d->events = 0;
        d->samples_total = 0;
        sc_drift_restart(d);
}

void sc_drift_restart(sc_drift_t *d)
{
        d->n = 0;
        d->mean = 0.0;
        d->cum = 0.0;
        d->cum_min = 0.0;
}

int sc_drift_add(sc_drift_t *d, double x)
{
        if (!isfinite(x))
                return 0;
        d->samples_total++;
        d->n++;
        d->mean += (x - d->mean) / (double)d->n;
        d->cum = d->spec.alpha * d->cum + (x - d->mean - d->spec.delta);
        if (d->cum < d->cum_min)
                d->cum_min = d->cum;
        if (d->n >= d->spec.min_samples && d->cum - d->cum_min > d->spec.threshold) {
                d->events++;
                sc_drift_restart(d);
                return 1;
        }
        return 0;
}

double sc_drift_statistic(const sc_drift_t *d)
{
        return d->cum - d->cum_min;
}
