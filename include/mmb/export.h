/**
 * \file mmb/export.h
 * Symbol visibility: libmmb.so is built with -fvisibility=hidden and exports
 * only the declarations marked MMB_EXPORT.
 */
#ifndef MMB_EXPORT_H
#define MMB_EXPORT_H

#if defined(MMB_BUILDING_LIBRARY) && defined(__GNUC__)
#define MMB_EXPORT __attribute__((visibility("default")))
#else
#define MMB_EXPORT
#endif

/* Every function that returns an mmbError asks that the result be used: an
   error ignored is a crash later. GCC does not accept a (void) cast as a
   use; compile with -DMMB_NODISCARD= to turn the warning off. */
#ifndef MMB_NODISCARD
#if defined(__GNUC__)
#define MMB_NODISCARD __attribute__((warn_unused_result))
#else
#define MMB_NODISCARD
#endif
#endif

/* A name kept for one release after it was renamed: calling it warns and
   names its replacement. Compile with -DMMB_DEPRECATED(x)= to silence it. */
#ifndef MMB_DEPRECATED
#if defined(__GNUC__)
#define MMB_DEPRECATED(replacement) __attribute__((deprecated("use " replacement)))
#else
#define MMB_DEPRECATED(replacement)
#endif
#endif

#endif /* MMB_EXPORT_H */
