/* Discovery at init: the topology's NUMA nodes become DRAM, HBM or NVDIMM
   spaces; CUDA devices become GDRAM spaces, and pinned (DRAM, GPU_CUDA)
   spaces appear beside each DRAM node when there is a device. Each space
   notes which built-in providers serve it (the providers are installed
   first). Everything about the machine comes from src/os. */
#include "alloc/model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool contains(const char *haystack, const char *needle) {
  return strcasestr(haystack, needle) != NULL;
}

/* hwloc names special memory in the node's subtype (MCDRAM, HBM, NVM, GPUMemory)
   and in the DAXType info of persistent memory. */
static int classify_by_name(const mmb__numa_node *node) {
  if (contains(node->subtype, "GPUMemory")) return -1;   /* seen through CUDA instead */
  if (contains(node->subtype, "HBM") || contains(node->subtype, "MCDRAM")) return MMB_HBM;
  if (contains(node->subtype, "NVM") || contains(node->subtype, "NVDIMM") ||
      contains(node->dax_type, "NVM"))
    return MMB_NVDIMM;
  return MMB_DRAM;
}

static unsigned providers_serving(const mmbSpaceInfo *info) {
  unsigned providers = 0;
  mmbMemSpace probe = {.info = *info, .served_as = mmb__layer_served_as(info->layer)};
  for (int t = MMB_PROVIDER_SYSTEM; t <= MMB_PROVIDER_FILE; t++) {
    const mmbProviderOps *ops = mmb__provider_lookup((mmbProviderType)t);
    if (ops && mmb__provider_serves(ops, (mmbProviderType)t, &probe)) providers |= 1u << t;
  }
  return providers;
}

static mmbError add(mmbSpaceInfo *info, mmbMemSpace *parent, mmbMemSpace **out) {
  info->providers = providers_serving(info);
  return mmb__space_add(info, parent, out);
}

/* Without names, memory attributes tell: a node whose best bandwidth is at
   least twice the slowest node's is HBM. */
static mmbError add_numa_spaces(int nodes, mmbMemSpace **dram_of_node) {
  unsigned long long slowest = 0;
  size_t physical = mmb__os_physical_memory();
  mmb__numa_node node;
  for (int i = 0; i < nodes && mmb__os_numa_node(i, &node); i++)
    if (node.best_bandwidth && (!slowest || node.best_bandwidth < slowest))
      slowest = node.best_bandwidth;
  for (int i = 0; i < nodes && mmb__os_numa_node(i, &node); i++) {
    int layer = classify_by_name(&node);
    if (layer < 0) continue;
    if (layer == MMB_DRAM && slowest && node.best_bandwidth >= 2 * slowest) layer = MMB_HBM;
    mmbSpaceInfo info = {.layer = (mmbMemLayer)layer, .context = MMB_CPU,
                         .numa_node = (int)node.os_index, .device = -1,
                         .capacity = node.local_memory,
                         .default_provider = MMB_PROVIDER_SYSTEM,
                         .bandwidth = node.best_bandwidth, .latency = node.best_latency};
    /* One node holds all memory; some VMs report less for it in sysfs. */
    if (nodes == 1 && info.capacity < physical) info.capacity = physical;
    snprintf(info.name, sizeof info.name, "%s (NUMA %u)", mmb_layer_name(info.layer),
             node.os_index);
    mmbError err = add(&info, NULL, &dram_of_node[i]);
    if (err != MMB_OK) return err;
    mmb__log(MMB_LOG_DEBUG, "space %s: %zu bytes%s%s", info.name, info.capacity,
             *node.subtype ? ", hwloc subtype " : "", node.subtype);
  }
  return MMB_OK;
}

static mmbError add_cuda_spaces(int nodes, mmbMemSpace **dram_of_node) {
  const mmb__cuda_runtime *cuda = mmb__os_cuda();
  int devices = mmb__cuda_device_count();
  for (int d = 0; d < devices; d++) {
    size_t free_bytes = 0, total = 0;
    mmbError err = cuda->mem_info(d, &free_bytes, &total);
    if (err != MMB_OK) return err;
    mmbSpaceInfo info = {.layer = MMB_GDRAM, .context = MMB_GPU_CUDA, .numa_node = -1,
                         .device = d, .capacity = total, .default_provider = MMB_PROVIDER_CUDA};
    snprintf(info.name, sizeof info.name, "GDRAM (GPU %d)", d);
    if ((err = add(&info, NULL, NULL)) != MMB_OK) return err;
  }
  if (devices == 0) return MMB_OK;
  /* Pinned host memory: DRAM accessed by the GPU; it draws on the node's DRAM. */
  for (int i = 0; i < nodes; i++) {
    mmbMemSpace *dram = dram_of_node[i];
    if (!dram || dram->info.layer != MMB_DRAM) continue;
    mmbSpaceInfo info = dram->info;
    info.context = MMB_GPU_CUDA;
    info.default_provider = MMB_PROVIDER_PINNED;
    snprintf(info.name, sizeof info.name, "DRAM pinned (NUMA %d)", dram->info.numa_node);
    mmbError err = add(&info, dram, NULL);
    if (err != MMB_OK) return err;
  }
  return MMB_OK;
}

/* MMB_EMULATE=LAYER:SIZE[:bw=RATE][,...]: a tier this node lacks, made
   over the first DRAM node so that tiered code runs anywhere; RATE (bytes
   per second, K/M/G/T) slows the copies to and from it to that bandwidth.
   DRAM:bw=RATE throttles the node's DRAM spaces themselves, a slow capacity
   tier. A space's info.bandwidth then says the rate (MiB/s). */
static mmbError emulation_failed(const char *env, const char *why) {
  mmb__log(MMB_LOG_ERROR, "MMB_EMULATE='%s': %s (expected LAYER:SIZE[:bw=RATE], LAYER HBM or "
           "NVDIMM, or DRAM:bw=RATE; e.g. HBM:4G, NVDIMM:64G:bw=8G or DRAM:bw=5G, entries "
           "separated by commas)", env, why);
  return MMB_INVALID_ARG;
}

static void set_throttle(mmbMemSpace *s, size_t bytes_per_s) {
  s->throttle = bytes_per_s;
  s->info.bandwidth = bytes_per_s / (1024 * 1024) ? bytes_per_s / (1024 * 1024) : 1;
}

/* DRAM:bw=RATE: every DRAM space of the node copies at most at RATE. */
static mmbError throttle_dram(const char *env, const char *opt, mmbMemSpace *const *dram_of_node,
                              int nodes) {
  size_t rate = 0;
  if (strncmp(opt, "bw=", 3) != 0 || !mmb__parse_size(opt + 3, &rate) || !rate)
    return emulation_failed(env, "DRAM takes only bw=RATE, a rate above 0 (bytes per second)");
  for (int i = 0; i < nodes; i++)
    if (dram_of_node[i] && dram_of_node[i]->info.layer == MMB_DRAM) {
      set_throttle(dram_of_node[i], rate);
      mmb__log(MMB_LOG_INFO, "MMB_EMULATE: space %s, copies at most bw=%s",
               dram_of_node[i]->info.name, opt + 3);
    }
  return MMB_OK;
}

static mmbError add_emulated(const char *env, mmbMemSpace *const *dram_of_node, int nodes) {
  const mmbMemSpace *dram = NULL;
  for (int i = 0; i < nodes && !dram; i++)
    if (dram_of_node[i] && dram_of_node[i]->info.layer == MMB_DRAM) dram = dram_of_node[i];
  if (!dram) return emulation_failed(env, "this node has no DRAM to emulate a tier over");
  char copy[256];
  size_t len = strlen(env);
  if (len >= sizeof copy) return emulation_failed(env, "too long");
  if (env[0] == ',' || env[len - 1] == ',' || strstr(env, ",,"))
    return emulation_failed(env, "an entry is empty");
  snprintf(copy, sizeof copy, "%s", env);
  char *save = NULL;
  for (char *entry = strtok_r(copy, ",", &save); entry; entry = strtok_r(NULL, ",", &save)) {
    char *layer = entry, *size = strchr(entry, ':'), *rate = NULL;
    if (!size) return emulation_failed(env, "an entry has no size");
    *size++ = '\0';
    if (!strcasecmp(layer, "DRAM")) {
      mmbError err = throttle_dram(env, size, dram_of_node, nodes);
      if (err != MMB_OK) return err;
      continue;
    }
    if ((rate = strchr(size, ':'))) {
      *rate++ = '\0';
      if (strncmp(rate, "bw=", 3) != 0) return emulation_failed(env, "unknown option after the size");
      rate += 3;
    }
    mmbSpaceInfo info = {.context = MMB_CPU, .numa_node = dram->info.numa_node, .device = -1,
                         .default_provider = MMB_PROVIDER_SYSTEM, .emulated = true};
    if (!strcasecmp(layer, "HBM")) info.layer = MMB_HBM;
    else if (!strcasecmp(layer, "NVDIMM")) info.layer = MMB_NVDIMM;
    else return emulation_failed(env, "the layer is not HBM or NVDIMM");
    size_t throttle = 0;
    if (!mmb__parse_size(size, &info.capacity) || !info.capacity)
      return emulation_failed(env, "the size is not a size above 0");
    if (rate && (!mmb__parse_size(rate, &throttle) || !throttle))
      return emulation_failed(env, "bw= is not a rate above 0 (bytes per second)");
    if (info.capacity > dram->info.capacity)
      mmb__log(MMB_LOG_WARN, "MMB_EMULATE: %s of %zu bytes over %zu bytes of DRAM", layer,
               info.capacity, dram->info.capacity);
    snprintf(info.name, sizeof info.name, "%s (emulated, NUMA %d)", mmb_layer_name(info.layer),
             dram->info.numa_node);
    mmbMemSpace *s;
    mmbError err = add(&info, NULL, &s);
    if (err != MMB_OK) return err;
    if (throttle) set_throttle(s, throttle);
    mmb__log(MMB_LOG_INFO, "MMB_EMULATE: space %s, %zu bytes%s%s", info.name, info.capacity,
             rate ? ", copies at most bw=" : "", rate ? rate : "");
  }
  return MMB_OK;
}

/* The storage tier: files in a directory of a disk (src/os/storage.c),
   the free space of its file system as its capacity. */
static mmbError add_storage_space(void) {
  const char *dir = mmb__os_storage_dir();
  size_t free_bytes = mmb__os_storage_free();
  if (!dir || !free_bytes) return MMB_OK;
  mmbSpaceInfo info = {.layer = MMB_STORAGE, .context = MMB_CPU, .numa_node = -1, .device = -1,
                       .capacity = free_bytes, .default_provider = MMB_PROVIDER_FILE};
  snprintf(info.name, sizeof info.name, "STORAGE (%.36s)", dir);
  mmb__log(MMB_LOG_DEBUG, "space %s: %zu bytes free", info.name, free_bytes);
  return add(&info, NULL, NULL);
}

/* A layer of the user's and its one space, over the backing layer's
   index-th space (its NUMA node, and its providers unless device_only). */
static mmbError add_user_layer(const char *func, const char *name,
                               const mmbLayerProperties *props, mmbMemLayer *out) {
  mmbMemLayer l = MMB_MEMLAYER_MAX;   /* (set when err is MMB_OK; LTO cannot tell) */
  mmbError err = mmb__layer_add(func, name, props, &l);   /* (checks the name and backing) */
  if (err != MMB_OK) return err;
  const mmbMemSpace *base = mmb__space_find_discovered(props->backing, MMB_CPU, props->numa_node);
  if (!base) {
    mmb__layer_remove_last();
    return mmb__fail(MMB_UNAVAILABLE, func, "no %s space #%d on this node to back layer %s",
                     mmb_layer_name(props->backing), props->numa_node, name);
  }
  mmbSpaceInfo info = base->info;
  info.layer = l;
  info.emulated = false;
  if (props->capacity) info.capacity = props->capacity;
  if (props->bandwidth) info.bandwidth = props->bandwidth;
  if (props->latency) info.latency = props->latency;
  if (props->device_only) info.default_provider = MMB_PROVIDER_DEFAULT;   /* none: name one */
  snprintf(info.name, sizeof info.name, "%s (NUMA %d)", name, base->info.numa_node);
  if ((err = add(&info, NULL, NULL)) != MMB_OK) {
    mmb__layer_remove_last();
    return err;
  }
  mmb__log(MMB_LOG_INFO, "layer %s: %zu bytes over %s", name, info.capacity, base->info.name);
  *out = l;
  return MMB_OK;
}

mmbError mmb_layer_register(const char *name, const mmbLayerProperties *properties,
                            mmbMemLayer *out_layer) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!name || !properties || !out_layer, __func__, "NULL argument");
  return add_user_layer(__func__, name, properties, out_layer);
}

/* MMB_LAYERS="NAME:BACKING[:INDEX[:SIZE]],...": layers registered at init. */
static mmbError add_env_layers(const char *env) {
  char copy[512];
  if (strlen(env) >= sizeof copy) {
    mmb__log(MMB_LOG_ERROR, "MMB_LAYERS is longer than %zu bytes", sizeof copy - 1);
    return MMB_INVALID_ARG;
  }
  snprintf(copy, sizeof copy, "%s", env);
  char *save = NULL;
  for (char *entry = strtok_r(copy, ",", &save); entry; entry = strtok_r(NULL, ",", &save)) {
    char *part[4] = {0}, *rest = entry;
    int n = 0;
    while (n < 4 && (part[n] = strsep(&rest, ":"))) n++;
    mmbLayerProperties props = {0};
    size_t index = 0;
    bool ok = n >= 2 && !rest && (!strcasecmp(part[1], "DRAM") || !strcasecmp(part[1], "HBM") ||
                                  !strcasecmp(part[1], "NVDIMM"));
    if (ok) props.backing = !strcasecmp(part[1], "DRAM") ? MMB_DRAM
                            : !strcasecmp(part[1], "HBM") ? MMB_HBM : MMB_NVDIMM;
    if (ok && n >= 3) ok = mmb__parse_size(part[2], &index) && index <= 4096;
    if (ok && n >= 4) ok = mmb__parse_size(part[3], &props.capacity) && props.capacity;
    if (!ok) {
      mmb__log(MMB_LOG_ERROR, "MMB_LAYERS='%s': an entry is not NAME:DRAM|HBM|NVDIMM[:INDEX"
               "[:SIZE]]", env);
      return MMB_INVALID_ARG;
    }
    props.numa_node = (int)index;
    mmbMemLayer l;
    mmbError err = add_user_layer("MMB_LAYERS", part[0], &props, &l);
    if (err != MMB_OK) return err;
  }
  return MMB_OK;
}

mmbError mmb__spaces_discover(void) {
  int nodes = mmb__os_numa_count();
  mmbMemSpace *dram_of_node[MMB__MAX_NUMA_NODES] = {0};
  mmbError err = add_numa_spaces(nodes, dram_of_node);
  const char *emulate = getenv("MMB_EMULATE");
  if (err == MMB_OK && emulate && *emulate) err = add_emulated(emulate, dram_of_node, nodes);
  if (err == MMB_OK) err = add_cuda_spaces(nodes, dram_of_node);
  if (err == MMB_OK) err = add_storage_space();
  const char *layers = getenv("MMB_LAYERS");
  return err == MMB_OK && layers && *layers ? add_env_layers(layers) : err;
}
