// Service Bus namespace with the session-enabled command queue. Sessions (sessionId = <userId>:<sessionId>) keep each
// memory session in order; a message that keeps failing or expires goes to the dead-letter queue. Local (SAS) auth is
// disabled: producers and the app use Entra ID.

param namespaceName string
param location string
param tags object
param queueName string

@description('Deliveries before a message is dead-lettered.')
@minValue(1)
param maxDeliveryCount int = 10

@description('How long a message may wait before it expires (and is dead-lettered).')
param defaultMessageTimeToLive string = 'P14D'

@description('Peek-lock duration; the Functions extension renews it while the handler runs.')
param lockDuration string = 'PT1M'

resource namespace 'Microsoft.ServiceBus/namespaces@2024-01-01' = {
  name: namespaceName
  location: location
  tags: tags
  // Sessions need Standard or Premium.
  sku: {
    name: 'Standard'
    tier: 'Standard'
  }
  properties: {
    disableLocalAuth: true
    minimumTlsVersion: '1.2'
    publicNetworkAccess: 'Enabled'
  }
}

resource queue 'Microsoft.ServiceBus/namespaces/queues@2024-01-01' = {
  parent: namespace
  name: queueName
  properties: {
    requiresSession: true
    deadLetteringOnMessageExpiration: true
    maxDeliveryCount: maxDeliveryCount
    defaultMessageTimeToLive: defaultMessageTimeToLive
    lockDuration: lockDuration
    // A resent message with the same MessageId within the window is dropped (the handler is idempotent as well).
    requiresDuplicateDetection: true
    duplicateDetectionHistoryTimeWindow: 'PT10M'
    enablePartitioning: false
  }
}

output namespaceName string = namespace.name
output id string = namespace.id
// serviceBusEndpoint is https://<namespace>.<cloud suffix>:443/ (the suffix differs in sovereign clouds).
output fullyQualifiedNamespace string = split(replace(namespace.properties.serviceBusEndpoint, 'https://', ''), ':')[0]
output queueName string = queue.name
