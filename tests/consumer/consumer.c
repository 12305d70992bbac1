/*
 * consumer.c — a C program that uses an installed libkareus: the version (macros and library
 * agree), a built-in job, and an error for a name that is not one. Built by
 * scripts/check-consumers.sh through pkg-config and through find_package(kareus).
 */
#include <stdio.h>
#include <string.h>

#include <kareus/kareus.h>

int main(void)
{
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", KAREUS_VERSION_MAJOR, KAREUS_VERSION_MINOR, KAREUS_VERSION_PATCH);
    if (strcmp(kr_version(), want) != 0) {
        fprintf(stderr, "consumer: library %s, headers %s\n", kr_version(), want);
        return 1;
    }
    kr_job job;
    kr_error err;
    if (kr_job_builtin("default", &job, &err) != KR_OK) {
        fprintf(stderr, "consumer: %s\n", err.msg);
        return 1;
    }
    int rc = kr_job_builtin("no-such-job", &job, &err);
    if (rc != KR_ENOTFOUND) {
        fprintf(stderr, "consumer: expected KR_ENOTFOUND, got %s\n", kr_status_name(rc));
        return 1;
    }
    printf("C consumer: libkareus %s, job %s (TP %d, PP %d); %s: %s\n", kr_version(), "default", job.tp,
           job.pp, kr_status_name(rc), kr_strerror(rc));
    return 0;
}
