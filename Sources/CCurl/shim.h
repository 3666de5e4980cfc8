// libcurl's setopt functions are variadic macros with type checks Swift cannot import;
// typed static inline wrappers give Swift one checked entry point per argument type.
#ifndef HERALD_CCURL_SHIM_H
#define HERALD_CCURL_SHIM_H
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

static inline CURLcode herald_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_easy_setopt_ptr(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_easy_setopt_cstr(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_easy_setopt_writefn(CURL *h, CURLoption o, size_t (*f)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, o, f); }
static inline CURLcode herald_easy_setopt_sockoptfn(CURL *h, CURLoption o, int (*f)(void *, curl_socket_t, curlsocktype)) { return curl_easy_setopt(h, o, f); }
static inline CURLcode herald_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLMcode herald_multi_setopt_long(CURLM *h, CURLMoption o, long v) { return curl_multi_setopt(h, o, v); }
static inline CURLcode herald_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode herald_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
// CURLVERSION_NOW is a macro: the struct version this header describes.
static inline curl_version_info_data *herald_curl_version_info(void) { return curl_version_info(CURLVERSION_NOW); }
static inline CURLcode herald_easy_getinfo_socket(CURL *h, CURLINFO i, curl_socket_t *v) { return curl_easy_getinfo(h, i, v); }
#endif
