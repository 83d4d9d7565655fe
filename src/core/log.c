/* Logging to stderr with a level from mmbOptions, MMB_LOG_LEVEL or the API. */
#include "core/internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static _Atomic int log_level = MMB_LOG_WARN;

static const char *level_name(mmbLogLevel level) {
  switch (level) {
    case MMB_LOG_ERROR: return "error";
    case MMB_LOG_WARN: return "warning";
    case MMB_LOG_INFO: return "info";
    default: return "debug";
  }
}

static bool log_enabled(mmbLogLevel level) {
  return level >= MMB_LOG_ERROR &&
         (int)level <= atomic_load_explicit(&log_level, memory_order_relaxed);
}

/* The caller's logger, if any; the lock also makes messages one at a time. */
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static mmbLogFunction sink;
static void *sink_data;

mmbError mmb_logging_set_callback(mmbLogFunction fn, void *user_data) {
  pthread_mutex_lock(&sink_lock);
  sink = fn;
  sink_data = user_data;
  pthread_mutex_unlock(&sink_lock);
  return MMB_OK;
}

static void log_va(mmbLogLevel level, const char *func, const char *fmt, va_list ap) {
  char text[512];
  int n = func ? snprintf(text, sizeof text, "%s: ", func) : 0;
  vsnprintf(text + n, sizeof text - (size_t)n, fmt, ap);
  pthread_mutex_lock(&sink_lock);
  if (sink) sink(level, text, sink_data);
  else fprintf(stderr, "mmb: %s: %s\n", level_name(level), text);   /* one write a line */
  pthread_mutex_unlock(&sink_lock);
}


void mmb_log(mmbLogLevel level, const char *fmt, ...) {
  if (!fmt || !log_enabled(level)) return;
  va_list ap;
  va_start(ap, fmt);
  log_va(level, NULL, fmt, ap);
  va_end(ap);
}

/* (the name in parentheses: never the analyser's macro, internal.h) */
mmbError (mmb__fail)(mmbError err, const char *func, const char *fmt, ...) {
  if (log_enabled(MMB_LOG_DEBUG)) {
    va_list ap;
    va_start(ap, fmt);
    log_va(MMB_LOG_DEBUG, func, fmt, ap);
    va_end(ap);
  }
  return err;
}

/* MMB_LOG_DEFAULT resolves to the environment, else warn. */
static mmbError resolve_level(mmbLogLevel wanted, mmbLogLevel *out) {
  if (wanted != MMB_LOG_DEFAULT) {
    if (wanted < MMB_LOG_OFF || wanted > MMB_LOG_DEBUG) return MMB_INVALID_ARG;
    *out = wanted;
    return MMB_OK;
  }
  const char *env = getenv("MMB_LOG_LEVEL");
  if (!env || !*env) {
    *out = MMB_LOG_WARN;
    return MMB_OK;
  }
  if (!mmb__parse_log_level(env, out)) {
    fprintf(stderr, "mmb: error: MMB_LOG_LEVEL='%s' is not one of off, error, warn, info, debug\n",
            env);
    return MMB_INVALID_ARG;
  }
  return MMB_OK;
}

mmbError mmb__log_configure(mmbLogLevel from_options) {
  mmbLogLevel level;
  mmbError err = resolve_level(from_options, &level);
  if (err == MMB_OK) atomic_store(&log_level, (int)level);
  return err;
}

mmbError mmb_logging_set_level(mmbLogLevel level) {
  MMB__REQUIRE_INIT();
  mmbLogLevel resolved;
  mmbError err = resolve_level(level, &resolved);
  if (err != MMB_OK) return mmb__fail(err, __func__, "unknown log level %d", (int)level);
  atomic_store(&log_level, (int)resolved);
  return MMB_OK;
}

mmbError mmb_logging_get_level(mmbLogLevel *out_level) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!out_level, __func__, "out_level is NULL");
  *out_level = (mmbLogLevel)atomic_load(&log_level);
  return MMB_OK;
}

void mmb__must(mmbError err, const char *call) {
  if (err != MMB_OK) mmb__log(MMB_LOG_ERROR, "internal: %s: %s", call, mmb_error_string(err));
}
