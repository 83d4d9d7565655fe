/* The table of providers: built-in ones installed by the lifecycle, and
   registered ones. The calls to a provider's alloc and free are draw.c's. */
#include "alloc/model/model.h"

#define MAX_USER_PROVIDERS 32

/* Filled by the lifecycle at init (the allocator names no provider). */
static const mmbProviderOps *_Atomic builtin[MMB_PROVIDER_USER];

void mmb__provider_install(mmbProviderType type, const mmbProviderOps *ops) {
  atomic_store(&builtin[type], ops);
}

static pthread_mutex_t user_lock = PTHREAD_MUTEX_INITIALIZER;
static const mmbProviderOps *_Atomic user[MAX_USER_PROVIDERS];
static _Atomic unsigned n_user;

const mmbProviderOps *mmb__provider_lookup(mmbProviderType type) {
  if ((unsigned)type < MMB_PROVIDER_USER) return atomic_load(&builtin[type]);
  unsigned i = (unsigned)type - MMB_PROVIDER_USER;
  return i < MAX_USER_PROVIDERS && i < atomic_load(&n_user) ? atomic_load(&user[i]) : NULL;
}

/* Built-in providers know their layers; pinned and cuda also need a device. */
bool mmb__provider_serves(const mmbProviderOps *ops, mmbProviderType type,
                          const mmbMemSpace *space) {
  int as = space->served_as;   /* a user layer: its backing's */
  if (ops->layers && (as < 0 || !(ops->layers & (1u << as)))) return false;
  if (type == MMB_PROVIDER_SYSTEM) return space->info.context == MMB_CPU;
  return true;
}

mmbProviderType mmb__provider_default(const mmbMemSpace *space) {
  if (space->info.default_provider != MMB_PROVIDER_DEFAULT) return space->info.default_provider;
  unsigned n = atomic_load(&n_user);
  for (unsigned i = 0; i < n; i++) {
    mmbProviderType type = (mmbProviderType)(MMB_PROVIDER_USER + i);
    if (mmb__provider_serves(atomic_load(&user[i]), type, space)) return type;
  }
  return MMB_PROVIDER_DEFAULT;
}

const char *mmb_provider_name(mmbProviderType type) {
  const mmbProviderOps *ops = mmb__provider_lookup(type);
  if (ops) return ops->name;
  switch (type) {
    case MMB_PROVIDER_SYSTEM: return "system";
    case MMB_PROVIDER_PINNED: return "pinned";
    case MMB_PROVIDER_CUDA: return "cuda";
    case MMB_PROVIDER_FILE: return "file";
    default: return "unknown";
  }
}

mmbError mmb_provider_register(const mmbProviderOps *ops, mmbProviderType *out_type) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!ops || !out_type, __func__, "NULL argument");
  if (ops->abi_version != MMB_PROVIDER_ABI_VERSION)
    return mmb__fail(MMB_UNSUPPORTED, __func__, "provider ABI %u, this mmb speaks %u",
                     ops->abi_version, MMB_PROVIDER_ABI_VERSION);
  MMB__ARG(!ops->name || !ops->alloc || !ops->free, __func__,
           "a provider needs a name, alloc and free");
  MMB__ARG(!(ops->caps & MMB_PROVIDER_HOST_ACCESSIBLE) && !ops->copy_2d, __func__,
           "provider '%s' is not host accessible and has no copy_2d", ops->name);
  MMB__ARG(ops->layers >> MMB_MEMLAYER_MAX, __func__, "unknown layer bits in 0x%x", ops->layers);
  pthread_mutex_lock(&user_lock);
  unsigned i = atomic_load(&n_user);
  if (i == MAX_USER_PROVIDERS) {
    pthread_mutex_unlock(&user_lock);
    return mmb__fail(MMB_OUT_OF_MEMORY, __func__, "already %d user providers", MAX_USER_PROVIDERS);
  }
  atomic_store(&user[i], ops);
  atomic_store(&n_user, i + 1);
  pthread_mutex_unlock(&user_lock);
  *out_type = (mmbProviderType)(MMB_PROVIDER_USER + i);
  mmb__log(MMB_LOG_INFO, "provider '%s' registered as type %u", ops->name, MMB_PROVIDER_USER + i);
  return MMB_OK;
}

mmbError mmb_provider_get_ops(mmbProviderType type, const mmbProviderOps **out_ops) {
  MMB__REQUIRE_INIT();
  MMB__ARG(!out_ops, __func__, "out_ops is NULL");
  const mmbProviderOps *ops = mmb__provider_lookup(type);
  if (!ops) return mmb__fail(MMB_UNAVAILABLE, __func__, "no provider of type %d", (int)type);
  *out_ops = ops;
  return MMB_OK;
}

void mmb__providers_finalize(void) {
  pthread_mutex_lock(&user_lock);
  atomic_store(&n_user, 0);
  pthread_mutex_unlock(&user_lock);
  for (unsigned t = 0; t < MMB_PROVIDER_USER; t++) atomic_store(&builtin[t], NULL);
}
