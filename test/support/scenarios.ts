/** The financial-advisor scenario of the design: a client states age, family, goal, risk tolerance and concerns. */
export const ADVISOR_SESSION: { role: 'user' | 'assistant'; content: string }[] = [
  { role: 'user', content: "Hi, I'm 45 years old and I want to plan for retirement." },
  { role: 'assistant', content: 'Happy to help. Tell me a little about your family.' },
  { role: 'user', content: "I'm married and we have two kids who will start college in a few years." },
  { role: 'assistant', content: 'What is your main goal?' },
  { role: 'user', content: 'My goal is to retire at 60 with enough savings to travel.' },
  { role: 'assistant', content: 'How do you feel about investment risk?' },
  { role: 'user', content: "I'm fairly conservative, I can't stomach big losses in the market." },
  { role: 'assistant', content: 'Understood. Anything that worries you?' },
  { role: 'user', content: "I'm worried about rising healthcare costs and that we could run out of money." },
  { role: 'assistant', content: 'We will look at an allocation that protects your savings.' },
  { role: 'user', content: 'I currently have $200,000 in my 401k.' },
  { role: 'assistant', content: 'Thanks, that is a good base.' },
];
