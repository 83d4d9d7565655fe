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

#if defined(__GNUC__)
#define MMB_NODISCARD __attribute__((warn_unused_result))
#else
#define MMB_NODISCARD
#endif

#endif /* MMB_EXPORT_H */
