/* What each error code is called and says, from MMB_ERROR_MAP (mmb/types.h). */
#include "core/internal.h"

const char *mmb_error_string(mmbError err) {
  switch (err) {
#define MMB__ERROR_TEXT(name, text) \
  case name: return text;
    MMB_ERROR_MAP(MMB__ERROR_TEXT)
#undef MMB__ERROR_TEXT
  }
  return "unknown mmb error code";
}

const char *mmb_error_name(mmbError err) {
  switch (err) {
#define MMB__ERROR_NAME(name, text) \
  case name: return #name;
    MMB_ERROR_MAP(MMB__ERROR_NAME)
#undef MMB__ERROR_NAME
  }
  return "MMB_UNKNOWN_ERROR";
}
