/* test_optim.c — SGD, momentum, Nesterov and weight decay against
 * hand-computed values; schedules at known steps; linear LR scaling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "sc_optim.h"

#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) < 1e-6)

static void plain_sgd_and_weight_decay(void **state)
{
        sc_sgd_t sgd = {0};
        float p[2] = {1.0f, -2.0f}, g[2] = {0.5f, 0.25f};

        assert_int_equal(sc_sgd_init(&sgd, &(sc_sgd_spec_t){0}, 2), SC_OK);
        sc_sgd_step(&sgd, p, g, 0.1f);
        NEAR(p[0], 0.95);
        NEAR(p[1], -2.025);
        sc_sgd_free(&sgd);
        /* g + wd * p: 0.5 + 0.1 * 1 = 0.6 -> 1 - 0.06. */
        p[0] = 1.0f;
        p[1] = -2.0f;
        assert_int_equal(sc_sgd_init(&sgd, &(sc_sgd_spec_t){.weight_decay = 0.1}, 2), SC_OK);
        sc_sgd_step(&sgd, p, g, 0.1f);
        NEAR(p[0], 0.94);
        NEAR(p[1], -2.0 - 0.1 * (0.25 - 0.2));
        sc_sgd_free(&sgd);
        sc_sgd_free(&sgd); /* twice is fine */
        sc_sgd_free(NULL);
}

static void momentum(void **state)
{
        sc_sgd_t sgd = {0};
        float p[1] = {1.0f}, g[1] = {0.5f};

        assert_int_equal(sc_sgd_init(&sgd, &(sc_sgd_spec_t){.momentum = 0.9}, 1), SC_OK);
        sc_sgd_step(&sgd, p, g, 0.1f); /* v = 0.5 */
        NEAR(p[0], 0.95);
        NEAR(sgd.velocity[0], 0.5);
        sc_sgd_step(&sgd, p, g, 0.1f); /* v = 0.95 */
        NEAR(p[0], 0.855);
        NEAR(sgd.velocity[0], 0.95);
        sc_sgd_free(&sgd);
}

static void nesterov_with_decay(void **state)
{
        sc_sgd_t sgd = {0};
        float p[1] = {1.0f}, g[1] = {0.5f};

        assert_int_equal(sc_sgd_init(&sgd, &(sc_sgd_spec_t){.momentum = 0.9, .nesterov = 1}, 1),
                         SC_OK);
        sc_sgd_step(&sgd, p, g, 0.1f); /* v = 0.5, update 0.5 + 0.45 */
        NEAR(p[0], 0.905);
        sc_sgd_step(&sgd, p, g, 0.1f); /* v = 0.95, update 0.5 + 0.855 */
        NEAR(p[0], 0.7695);
        sc_sgd_free(&sgd);

        p[0] = 1.0f;
        assert_int_equal(
            sc_sgd_init(&sgd, &(sc_sgd_spec_t){.momentum = 0.5, .nesterov = 1, .weight_decay = 0.5},
                        1),
            SC_OK);
        sc_sgd_step(&sgd, p, g, 1.0f); /* g' = 1, v = 1, update 1.5 */
        NEAR(p[0], -0.5);
        sc_sgd_free(&sgd);
}

static void bad_specs(void **state)
{
        sc_sgd_t sgd;
        assert_int_equal(sc_sgd_init(&sgd, &(sc_sgd_spec_t){.nesterov = 1}, 4), SC_ERR_INVAL);
        assert_null(sgd.velocity);
        assert_int_equal(sc_sgd_init(&sgd, &(sc_sgd_spec_t){.momentum = 1.0}, 4), SC_ERR_INVAL);
        assert_int_equal(sc_sgd_init(&sgd, &(sc_sgd_spec_t){.momentum = -0.1}, 4), SC_ERR_INVAL);
        assert_int_equal(sc_sgd_init(&sgd, &(sc_sgd_spec_t){.weight_decay = -1}, 4), SC_ERR_INVAL);
        assert_int_equal(sc_sgd_init(&sgd, &(sc_sgd_spec_t){.momentum = NAN}, 4), SC_ERR_INVAL);
        assert_int_equal(sc_sgd_init(&sgd, NULL, 4), SC_ERR_INVAL);
}

static void schedules(void **state)
{
        sc_sched_spec_t s = {.kind = SC_SCHED_CONSTANT, .lr = 0.1};
        NEAR(sc_sched_lr(&s, 0), 0.1);
        NEAR(sc_sched_lr(&s, 100000), 0.1);

        s.warmup_steps = 10; /* lr/10 at step 0, lr from step 9 */
        NEAR(sc_sched_lr(&s, 0), 0.01);
        NEAR(sc_sched_lr(&s, 4), 0.05);
        NEAR(sc_sched_lr(&s, 9), 0.1);
        NEAR(sc_sched_lr(&s, 10), 0.1);

        sc_sched_spec_t m = {.kind = SC_SCHED_MULTISTEP,
                             .lr = 0.1,
                             .gamma = 0.1,
                             .n_milestones = 2,
                             .milestones = {100, 200}};
        NEAR(sc_sched_lr(&m, 99), 0.1);
        NEAR(sc_sched_lr(&m, 100), 0.01);
        NEAR(sc_sched_lr(&m, 199), 0.01);
        NEAR(sc_sched_lr(&m, 250), 0.001);

        sc_sched_spec_t c = {.kind = SC_SCHED_COSINE, .lr = 1.0, .min_lr = 0.0, .total_steps = 100};
        NEAR(sc_sched_lr(&c, 0), 1.0);
        NEAR(sc_sched_lr(&c, 50), 0.5);
        NEAR(sc_sched_lr(&c, 25), 0.5 * (1 + cos(M_PI / 4)));
        NEAR(sc_sched_lr(&c, 100), 0.0);
        NEAR(sc_sched_lr(&c, 500), 0.0);
        c.min_lr = 0.2;
        c.warmup_steps = 10; /* the cosine starts after warmup */
        NEAR(sc_sched_lr(&c, 4), 0.5);
        NEAR(sc_sched_lr(&c, 10), 1.0);
        NEAR(sc_sched_lr(&c, 60), 0.6);
        NEAR(sc_sched_lr(&c, 110), 0.2);
}

static void linear_scaling(void **state)
{
        NEAR(sc_lr_scale_linear(0.1, 128, 64), 0.2);
        NEAR(sc_lr_scale_linear(0.1, 16, 64), 0.025);
        NEAR(sc_lr_scale_linear(0.1, 16, 0), 0.1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(plain_sgd_and_weight_decay),
            cmocka_unit_test(momentum),
            cmocka_unit_test(nesterov_with_decay),
            cmocka_unit_test(bad_specs),
            cmocka_unit_test(schedules),
            cmocka_unit_test(linear_scaling),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
