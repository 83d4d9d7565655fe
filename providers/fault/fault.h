/* Internal, for tests: a host provider that fails chosen allocations, and the
   global fault injector of src/core (every allocation site of the library). */
#ifndef MMB_FAULT_PROVIDER_H
#define MMB_FAULT_PROVIDER_H

#include <mmb/mmb.h>

/* Calls number from .. from+count-1 (counting from 0 since the last configure)
   of the fault provider's alloc fail with `error`. */
void mmb__fault_provider_configure(unsigned long from, unsigned long count, mmbError error);
extern const mmbProviderOps mmb__fault_provider;

void mmb__fault_arm(unsigned long skip, unsigned long count);
void mmb__fault_disarm(void);
unsigned long mmb__fault_failures(void);

#endif
