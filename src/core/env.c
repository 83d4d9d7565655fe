/* Parsing of environment values: sizes and log levels. */
#include "core/internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <strings.h>

bool mmb__parse_size(const char *text, size_t *out) {
  if (!text) return false;
  while (isspace((unsigned char)*text)) text++;
  if (!isdigit((unsigned char)*text)) return false;   /* no sign, no empty string */
  errno = 0;
  char *end;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno == ERANGE) return false;
  unsigned shift = 0;
  switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case 'T': shift = 40; end++; break;
    default: break;
  }
  if (shift && (*end == 'i' || *end == 'I')) end++;
  if (*end == 'B' || *end == 'b') end++;
  while (isspace((unsigned char)*end)) end++;
  if (*end != '\0') return false;
  if (value > (SIZE_MAX >> shift)) return false;
  *out = (size_t)value << shift;
  return true;
}

bool mmb__parse_log_level(const char *text, mmbLogLevel *out) {
  static const struct { const char *name; mmbLogLevel level; } names[] = {
      {"off", MMB_LOG_OFF},     {"none", MMB_LOG_OFF},  {"error", MMB_LOG_ERROR},
      {"warn", MMB_LOG_WARN},   {"warning", MMB_LOG_WARN}, {"info", MMB_LOG_INFO},
      {"debug", MMB_LOG_DEBUG},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (strcasecmp(text, names[i].name) == 0) {
      *out = names[i].level;
      return true;
    }
  }
  return false;
}
