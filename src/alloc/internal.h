/* Internal: what the floors above src/alloc see of it. The allocation
   layer has four sub-floors, each using only those below it (checked by
   tools/check-layers):
     model/      spaces, the providers' table, discovery, handles, interfaces
     observe/    statistics and the trace
     strategy/   draws on providers, strategies, regions, allocate and free
     move/       the copy engine and checked copies
   The allocator stands on src/os and reaches providers only through their
   tables (mmb/provider.h), installed by the lifecycle. */
#ifndef MMB_ALLOC_INTERNAL_H
#define MMB_ALLOC_INTERNAL_H

#include "alloc/move/move.h"

#endif /* MMB_ALLOC_INTERNAL_H */
