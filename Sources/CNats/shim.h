// libnats (the NATS C client, Debian libnats-dev), seen only by the NATS module.
#include <nats/nats.h>
