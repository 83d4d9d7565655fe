/**
 * \file mmb/mmb.h
 * The umbrella header of mmb: everything public is reachable from here.
 */
#ifndef MMB_MMB_H
#define MMB_MMB_H

#include <mmb/types.h>
#include <mmb/core.h>
#include <mmb/memory.h>
#include <mmb/allocation.h>
#include <mmb/region.h>
#include <mmb/trace.h>
#include <mmb/layout.h>
#include <mmb/array.h>
#include <mmb/tile.h>
#include <mmb/cyclic.h>
#include <mmb/queue.h>
#include <mmb/cache.h>
#include <mmb/provider.h>
#include <mmb/extension.h>

#endif /* MMB_MMB_H */
