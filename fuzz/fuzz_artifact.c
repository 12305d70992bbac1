/* fuzz_artifact.c — libFuzzer harness: the published artifact's plan files as they are read
 * (kr_plan_import_artifact: the literal reader, the layouts, the trailer, the job checks).
 *
 * One input is one or two files: the bytes before the first "\n#@scheds\n" are
 * `freqs_pipeline_N.py`, those after it `scheds_pipeline_N.py`. With a scheds file the pair is
 * imported for the Kareus variant on the default job (TP 8) and on the CP 2 × TP 4 job; without
 * one the freqs file is imported as a Perseus plan of the default job and a Nanobatching+Perseus
 * plan of the CP job. The seeds in
 * fuzz/corpus/artifact are the real artifact files of tests/data/artifact in this form. */
#include "fuzz_common.h"

#include "kareus/kareus.h"

static const char marker[] = "\n#@scheds\n";

static const uint8_t *find_marker(const uint8_t *data, size_t size)
{
    size_t m = sizeof marker - 1;
    for (size_t i = 0; i + m <= size; i++)
        if (memcmp(data + i, marker, m) == 0)
            return data + i;
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static kr_job jobs[2];
    static int have_jobs;
    if (!have_jobs) {
        kr_error e = {0};
        if (kr_job_builtin("default", &jobs[0], &e) != KR_OK ||
            kr_job_builtin("llama3.2-3b-cp2tp4-mbs8-s4096", &jobs[1], &e) != KR_OK)
            abort(); /* the harness itself is broken */
        have_jobs = 1;
    }
    const uint8_t *cut = find_marker(data, size);
    size_t nf = cut ? (size_t)(cut - data) : size;
    char freqs[512], scheds[512];
    /* The importer takes the step from the file name when the trailer has none. */
    if (fuzz_write("freqs_pipeline_00042.py", data, nf, freqs, sizeof freqs) == NULL)
        return 0;
    kr_plan p;
    kr_error err = {0};
    if (cut) {
        size_t skip = nf + sizeof marker - 1;
        if (fuzz_write("scheds_pipeline_00042.py", data + skip, size - skip, scheds, sizeof scheds) == NULL)
            return 0;
        for (int j = 0; j < 2; j++)
            if (kr_plan_import_artifact(&jobs[j], freqs, scheds, "kareus", &p, &err) == KR_OK) {
                (void)kr_plan_validate(&p, &jobs[j], &err);
                kr_plan_free(&p);
            }
    } else {
        /* The baselines share one reader; each job once, with the method of its own file. */
        static const char *const methods[2] = {"perseus", "nanobatch+perseus"};
        for (int j = 0; j < 2; j++)
            if (kr_plan_import_artifact(&jobs[j], freqs, NULL, methods[j], &p, &err) == KR_OK) {
                (void)kr_plan_validate(&p, &jobs[j], &err);
                kr_plan_free(&p);
            }
    }
    return 0;
}
