/*
 * Preloaded into DDNet 16.4 (Debian ddnet-server) by the testkit when it registers with an
 * HTTP master: libcurl share objects share nothing.
 *
 * DDNet 16.4 runs each HTTP request with curl_easy_perform in a job thread and gives all
 * of them one CURLSH sharing DNS, TLS sessions and connections (seen with gdb:
 * curl_share_setopt(CURLSHOPT_SHARE, 3/4/5)). Its 0.6 and 0.7 registrations start in the
 * same instant, and with libcurl 7.88 about one start in seven then dies with SIGSEGV
 * inside curl_easy_perform while the other thread connects (6 of 40 starts measured; with
 * this shim 0 of 60). libcurl documents connection sharing as unsupported across concurrent
 * threads. Without sharing each request resolves and connects on its own, which is all a
 * registration needs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>

#define CURLSHOPT_SHARE 1

typedef int (*share_setopt)(void *, int, ...);

int curl_share_setopt(void *share, int option, void *arg)
{
    static share_setopt next;
    if (option == CURLSHOPT_SHARE)
        return 0; /* CURLSHE_OK: nothing is shared */
    if (!next)
        next = (share_setopt)dlsym(RTLD_NEXT, "curl_share_setopt");
    if (!next)
        return 5; /* CURLSHE_NOT_BUILT_IN */
    return next(share, option, arg);
}
