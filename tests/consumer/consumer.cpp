// consumer.cpp — a C++ program that uses an installed libkareus: the public headers must give
// the declarations C linkage (KR_BEGIN_DECLS), or this fails to link. Built by
// scripts/check-consumers.sh through pkg-config and through find_package(kareus).
#include <cstdio>
#include <string>

#include <kareus/kareus.h>

int main()
{
    const std::string want = std::to_string(KAREUS_VERSION_MAJOR) + "." + std::to_string(KAREUS_VERSION_MINOR) +
                             "." + std::to_string(KAREUS_VERSION_PATCH);
    if (want != kr_version()) {
        std::fprintf(stderr, "consumer: library %s, headers %s\n", kr_version(), want.c_str());
        return 1;
    }
    const char *const *names = nullptr;
    int n = kr_job_suite_paper(&names);
    kr_job job;
    kr_error err;
    for (int i = 0; i < n; i++)
        if (kr_job_builtin(names[i], &job, &err) != KR_OK) {
            std::fprintf(stderr, "consumer: %s\n", err.msg);
            return 1;
        }
    std::printf("C++ consumer: libkareus %s, %d paper jobs, last %s (TP %d, CP %d)\n", kr_version(), n, names[n - 1],
                job.tp, job.cp);
    return 0;
}
